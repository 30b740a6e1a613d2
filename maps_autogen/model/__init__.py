"""Talking to models: the OpenAI-compatible client, the checks on a service's answers, the reply
cache, replica pools, token accounting, and the embedded local model (local/).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_names

if TYPE_CHECKING:
    from ._backends import backend_lock as backend_lock
    from ._backends import open_backend as open_backend
    from ._backends import step_backend as step_backend
    from ._batch_backend import BatchBackend as BatchBackend
    from ._batch_broker import BatchBroker as BatchBroker
    from ._batch_ledger import read_batch_records as read_batch_records
    from ._cache import ResponseCache as ResponseCache
    from ._client import ChatBackend as ChatBackend
    from ._client import JsonModeMemo as JsonModeMemo
    from ._client import ModelBackend as ModelBackend
    from ._client import ReplyCheck as ReplyCheck
    from ._client import RetryNote as RetryNote
    from ._client import schema_response_format as schema_response_format
    from ._completion import Completion as Completion
    from ._context import FITTED_KEY as FITTED_KEY
    from ._context import ServerContext as ServerContext
    from ._context import context_in_error as context_in_error
    from ._context import cut_off_detail as cut_off_detail
    from ._context import exceeds_context as exceeds_context
    from ._pool import ReplicaPool as ReplicaPool
    from ._service_answers import CUT_REASONS as CUT_REASONS
    from ._service_answers import TokenCallback as TokenCallback
    from ._service_answers import refuses_the_content as refuses_the_content
    from ._tokens import TOKENS_PER_MESSAGE as TOKENS_PER_MESSAGE
    from ._tokens import TOKENS_PER_REPLY as TOKENS_PER_REPLY
    from ._tokens import image_tokens as image_tokens
    from ._tokens import text_tokens as text_tokens

# name → the private module that defines it, imported on first use (PEP 562)
_EXPORTS: dict[str, str] = {
    'BatchBackend': '_batch_backend',
    'BatchBroker': '_batch_broker',
    'CUT_REASONS': '_service_answers',
    'FITTED_KEY': '_context',
    'ChatBackend': '_client',
    'Completion': '_completion',
    'JsonModeMemo': '_client',
    'ModelBackend': '_client',
    'ReplicaPool': '_pool',
    'ReplyCheck': '_client',
    'ServerContext': '_context',
    'ResponseCache': '_cache',
    'RetryNote': '_client',
    'TOKENS_PER_MESSAGE': '_tokens',
    'TOKENS_PER_REPLY': '_tokens',
    'TokenCallback': '_service_answers',
    'backend_lock': '_backends',
    'context_in_error': '_context',
    'cut_off_detail': '_context',
    'exceeds_context': '_context',
    'image_tokens': '_tokens',
    'open_backend': '_backends',
    'read_batch_records': '_batch_ledger',
    'refuses_the_content': '_service_answers',
    'schema_response_format': '_client',
    'step_backend': '_backends',
    'text_tokens': '_tokens',
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, globals())
