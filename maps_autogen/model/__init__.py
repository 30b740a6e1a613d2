"""Talking to models: the OpenAI-compatible client, the checks on a service's answers, the reply
cache, replica pools, token accounting, and the embedded local model (local/).
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._backends import backend_lock as backend_lock, open_backend as open_backend, step_backend as step_backend
    from ._batch_backend import BatchBackend as BatchBackend
    from ._batch_broker import BatchBroker as BatchBroker
    from ._batch_ledger import read_batch_records as read_batch_records
    from ._cache import ResponseCache as ResponseCache
    from ._client import (ChatBackend as ChatBackend, JsonModeMemo as JsonModeMemo, ModelBackend as ModelBackend,
                          ReplyCheck as ReplyCheck, RetryNote as RetryNote,
                          schema_response_format as schema_response_format)
    from ._completion import Completion as Completion
    from ._context import (FITTED_KEY as FITTED_KEY, ServerContext as ServerContext,
                           context_in_error as context_in_error, cut_off_detail as cut_off_detail,
                           exceeds_context as exceeds_context)
    from ._pool import ReplicaPool as ReplicaPool
    from ._service_answers import (CUT_REASONS as CUT_REASONS, TokenCallback as TokenCallback,
                                   refuses_the_content as refuses_the_content)
    from ._tokens import (TOKENS_PER_MESSAGE as TOKENS_PER_MESSAGE, TOKENS_PER_REPLY as TOKENS_PER_REPLY,
                          image_tokens as image_tokens, text_tokens as text_tokens)

__getattr__, __dir__ = lazy_exports(globals())
