"""Helpers below every layer, with no domain of their own: the error types, text made safe (valid
UTF-8, bounded nesting), secrets masked, size limits, interrupts (SIGINT/SIGTERM), the lifeline
that ends our helper processes, the run lock, the one atomic writer, its temporary files and
the output folders built whole.
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._artifacts import (FILE_MODE as FILE_MODE, PRIVATE_FILE_MODE as PRIVATE_FILE_MODE,
                             append_whole as append_whole, atomic_text_writer as atomic_text_writer,
                             copy_file as copy_file, disk_full as disk_full, iter_jsonl as iter_jsonl,
                             line_at as line_at, open_append as open_append, parse_read_back as parse_read_back,
                             path_written_beside as path_written_beside,
                             read_json_object as read_json_object, read_json_or_empty as read_json_or_empty,
                             read_jsonl_from as read_jsonl_from, write_bytes_file as write_bytes_file,
                             write_json_atomic as write_json_atomic, write_text_atomic as write_text_atomic)
    from ._errors import (ConfigError as ConfigError, DataError as DataError, DiskFullError as DiskFullError,
                          FatalServiceError as FatalServiceError, LocalModelError as LocalModelError,
                          MapsError as MapsError, OutputClosedError as OutputClosedError, ProblemError as ProblemError,
                          RunInterrupted as RunInterrupted, RunTerminated as RunTerminated,
                          ServiceError as ServiceError, UsageError as UsageError, missing_extra as missing_extra)
    from ._escaping import (csv_text as csv_text, csv_value as csv_value, markdown_table as markdown_table,
                            markdown_text as markdown_text)
    from ._folders import check_replaceable as check_replaceable, folder_built_beside as folder_built_beside
    from ._interrupts import (OUTPUT_CLOSED_EXIT_CODE as OUTPUT_CLOSED_EXIT_CODE,
                              TERMINATED_EXIT_CODE as TERMINATED_EXIT_CODE, ClosedOutputGuard as ClosedOutputGuard,
                              OutputClosed as OutputClosed, Terminated as Terminated,
                              exit_on_second_interrupt as exit_on_second_interrupt, finished as finished,
                              on_exit_now as on_exit_now, signals_deferred as signals_deferred,
                              silence_stdout as silence_stdout, stop_like_ctrl_c as stop_like_ctrl_c,
                              stopped_by as stopped_by)
    from ._lifeline import ParentLink as ParentLink, bind_to_parent as bind_to_parent
    from ._limits import (DEFAULT_REPLY_BYTES as DEFAULT_REPLY_BYTES, LineTooLong as LineTooLong,
                          body_limit as body_limit, cap_reply as cap_reply, capped_lines as capped_lines,
                          read_capped as read_capped, scoped as scoped)
    from ._redact import (MASK as MASK, WELL_KNOWN_KEY_VARIABLES as WELL_KNOWN_KEY_VARIABLES,
                          RedactingFilter as RedactingFilter, StreamRedactor as StreamRedactor,
                          escape_controls as escape_controls, looks_like_key as looks_like_key,
                          mask_credential_fields as mask_credential_fields, mask_url_userinfo as mask_url_userinfo,
                          names_a_credential as names_a_credential, pasted_keys as pasted_keys, redact as redact,
                          register_key_variables as register_key_variables, register_secret as register_secret,
                          register_url_secrets as register_url_secrets,
                          register_well_known_keys as register_well_known_keys,
                          registered_secrets as registered_secrets, secrets_written_in as secrets_written_in,
                          shown_value as shown_value, terminal_safe as terminal_safe,
                          terminal_safe_json as terminal_safe_json, url_secrets as url_secrets,
                          url_userinfo as url_userinfo)
    from ._runlock import RunLock as RunLock
    from ._text import (MAX_NESTING as MAX_NESTING, NumberTooLong as NumberTooLong, PieceJoiner as PieceJoiner,
                        TooDeep as TooDeep, json_loads as json_loads, may_hold_surrogates as may_hold_surrogates,
                        nesting_depth_over as nesting_depth_over, utf8_chunks as utf8_chunks, valid_text as valid_text,
                        valid_tree as valid_tree)
    from ._version import package_version as package_version

__getattr__, __dir__ = lazy_exports(globals())
