"""Helpers below every layer, with no domain of their own: the error types, text made safe (valid
UTF-8, bounded nesting), secrets masked, size limits, interrupts (SIGINT/SIGTERM), the lifeline
that ends our helper processes, the run lock, the one atomic writer, its temporary files and
the output folders built whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_names

if TYPE_CHECKING:
    from ._artifacts import FILE_MODE as FILE_MODE
    from ._artifacts import PRIVATE_FILE_MODE as PRIVATE_FILE_MODE
    from ._artifacts import append_whole as append_whole
    from ._artifacts import atomic_text_writer as atomic_text_writer
    from ._artifacts import copy_file as copy_file
    from ._artifacts import disk_full as disk_full
    from ._artifacts import iter_jsonl as iter_jsonl
    from ._artifacts import line_at as line_at
    from ._artifacts import open_append as open_append
    from ._artifacts import parse_read_back as parse_read_back
    from ._artifacts import read_json_object as read_json_object
    from ._artifacts import read_json_or_empty as read_json_or_empty
    from ._artifacts import read_jsonl_from as read_jsonl_from
    from ._artifacts import write_bytes_file as write_bytes_file
    from ._artifacts import write_json_atomic as write_json_atomic
    from ._artifacts import write_text_atomic as write_text_atomic
    from ._errors import ConfigError as ConfigError
    from ._errors import DataError as DataError
    from ._errors import DiskFullError as DiskFullError
    from ._errors import FatalServiceError as FatalServiceError
    from ._errors import LocalModelError as LocalModelError
    from ._errors import MapsError as MapsError
    from ._errors import OutputClosedError as OutputClosedError
    from ._errors import ProblemError as ProblemError
    from ._errors import RunInterrupted as RunInterrupted
    from ._errors import RunTerminated as RunTerminated
    from ._errors import ServiceError as ServiceError
    from ._errors import UsageError as UsageError
    from ._errors import missing_extra as missing_extra
    from ._escaping import csv_text as csv_text
    from ._escaping import csv_value as csv_value
    from ._escaping import markdown_table as markdown_table
    from ._escaping import markdown_text as markdown_text
    from ._folders import check_replaceable as check_replaceable
    from ._folders import folder_built_beside as folder_built_beside
    from ._interrupts import OUTPUT_CLOSED_EXIT_CODE as OUTPUT_CLOSED_EXIT_CODE
    from ._interrupts import TERMINATED_EXIT_CODE as TERMINATED_EXIT_CODE
    from ._interrupts import ClosedOutputGuard as ClosedOutputGuard
    from ._interrupts import OutputClosed as OutputClosed
    from ._interrupts import Terminated as Terminated
    from ._interrupts import exit_on_second_interrupt as exit_on_second_interrupt
    from ._interrupts import finished as finished
    from ._interrupts import on_exit_now as on_exit_now
    from ._interrupts import signals_deferred as signals_deferred
    from ._interrupts import silence_stdout as silence_stdout
    from ._interrupts import stop_like_ctrl_c as stop_like_ctrl_c
    from ._interrupts import stopped_by as stopped_by
    from ._lifeline import ParentLink as ParentLink
    from ._lifeline import bind_to_parent as bind_to_parent
    from ._limits import DEFAULT_REPLY_BYTES as DEFAULT_REPLY_BYTES
    from ._limits import LineTooLong as LineTooLong
    from ._limits import body_limit as body_limit
    from ._limits import cap_reply as cap_reply
    from ._limits import capped_lines as capped_lines
    from ._limits import read_capped as read_capped
    from ._limits import scoped as scoped
    from ._redact import MASK as MASK
    from ._redact import WELL_KNOWN_KEY_VARIABLES as WELL_KNOWN_KEY_VARIABLES
    from ._redact import RedactingFilter as RedactingFilter
    from ._redact import StreamRedactor as StreamRedactor
    from ._redact import escape_controls as escape_controls
    from ._redact import looks_like_key as looks_like_key
    from ._redact import mask_credential_fields as mask_credential_fields
    from ._redact import mask_url_userinfo as mask_url_userinfo
    from ._redact import names_a_credential as names_a_credential
    from ._redact import pasted_keys as pasted_keys
    from ._redact import redact as redact
    from ._redact import register_key_variables as register_key_variables
    from ._redact import register_secret as register_secret
    from ._redact import register_url_secrets as register_url_secrets
    from ._redact import register_well_known_keys as register_well_known_keys
    from ._redact import registered_secrets as registered_secrets
    from ._redact import secrets_written_in as secrets_written_in
    from ._redact import shown_value as shown_value
    from ._redact import terminal_safe as terminal_safe
    from ._redact import terminal_safe_json as terminal_safe_json
    from ._redact import url_secrets as url_secrets
    from ._redact import url_userinfo as url_userinfo
    from ._runlock import RunLock as RunLock
    from ._text import MAX_NESTING as MAX_NESTING
    from ._text import NumberTooLong as NumberTooLong
    from ._text import PieceJoiner as PieceJoiner
    from ._text import TooDeep as TooDeep
    from ._text import json_loads as json_loads
    from ._text import may_hold_surrogates as may_hold_surrogates
    from ._text import nesting_depth_over as nesting_depth_over
    from ._text import utf8_chunks as utf8_chunks
    from ._text import valid_text as valid_text
    from ._text import valid_tree as valid_tree
    from ._version import package_version as package_version

# name → the private module that defines it, imported on first use (PEP 562)
_EXPORTS: dict[str, str] = {
    'ClosedOutputGuard': '_interrupts',
    'ConfigError': '_errors',
    'DEFAULT_REPLY_BYTES': '_limits',
    'DataError': '_errors',
    'DiskFullError': '_errors',
    'FILE_MODE': '_artifacts',
    'FatalServiceError': '_errors',
    'LineTooLong': '_limits',
    'LocalModelError': '_errors',
    'MASK': '_redact',
    'MAX_NESTING': '_text',
    'MapsError': '_errors',
    'NumberTooLong': '_text',
    'OUTPUT_CLOSED_EXIT_CODE': '_interrupts',
    'OutputClosed': '_interrupts',
    'OutputClosedError': '_errors',
    'PRIVATE_FILE_MODE': '_artifacts',
    'ParentLink': '_lifeline',
    'PieceJoiner': '_text',
    'ProblemError': '_errors',
    'RedactingFilter': '_redact',
    'RunInterrupted': '_errors',
    'RunLock': '_runlock',
    'RunTerminated': '_errors',
    'ServiceError': '_errors',
    'StreamRedactor': '_redact',
    'TERMINATED_EXIT_CODE': '_interrupts',
    'Terminated': '_interrupts',
    'TooDeep': '_text',
    'UsageError': '_errors',
    'WELL_KNOWN_KEY_VARIABLES': '_redact',
    'append_whole': '_artifacts',
    'atomic_text_writer': '_artifacts',
    'bind_to_parent': '_lifeline',
    'body_limit': '_limits',
    'cap_reply': '_limits',
    'capped_lines': '_limits',
    'check_replaceable': '_folders',
    'copy_file': '_artifacts',
    'csv_text': '_escaping',
    'csv_value': '_escaping',
    'disk_full': '_artifacts',
    'escape_controls': '_redact',
    'exit_on_second_interrupt': '_interrupts',
    'finished': '_interrupts',
    'folder_built_beside': '_folders',
    'iter_jsonl': '_artifacts',
    'json_loads': '_text',
    'line_at': '_artifacts',
    'looks_like_key': '_redact',
    'markdown_table': '_escaping',
    'markdown_text': '_escaping',
    'mask_credential_fields': '_redact',
    'mask_url_userinfo': '_redact',
    'may_hold_surrogates': '_text',
    'missing_extra': '_errors',
    'names_a_credential': '_redact',
    'nesting_depth_over': '_text',
    'on_exit_now': '_interrupts',
    'open_append': '_artifacts',
    'package_version': '_version',
    'parse_read_back': '_artifacts',
    'pasted_keys': '_redact',
    'read_capped': '_limits',
    'read_json_object': '_artifacts',
    'read_json_or_empty': '_artifacts',
    'read_jsonl_from': '_artifacts',
    'redact': '_redact',
    'register_key_variables': '_redact',
    'register_secret': '_redact',
    'register_url_secrets': '_redact',
    'register_well_known_keys': '_redact',
    'registered_secrets': '_redact',
    'scoped': '_limits',
    'secrets_written_in': '_redact',
    'shown_value': '_redact',
    'signals_deferred': '_interrupts',
    'silence_stdout': '_interrupts',
    'stop_like_ctrl_c': '_interrupts',
    'stopped_by': '_interrupts',
    'terminal_safe': '_redact',
    'terminal_safe_json': '_redact',
    'url_secrets': '_redact',
    'url_userinfo': '_redact',
    'utf8_chunks': '_text',
    'valid_text': '_text',
    'valid_tree': '_text',
    'write_bytes_file': '_artifacts',
    'write_json_atomic': '_artifacts',
    'write_text_atomic': '_artifacts',
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, globals())
