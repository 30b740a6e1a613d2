"""The schema of every file a run writes (typed pydantic models and the vocabularies as Literals),
the typed readers, the one writer of a run folder's files, and the paths inside a run folder
kept inside it. It sits right after settings (the guide's list puts records after orchestration)
because records are made typed where they are made, in model and orchestration, so the schema
must be below both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_names

if TYPE_CHECKING:
    from ._batch_records import BATCHES_DIR as BATCHES_DIR
    from ._batch_records import ENDED as ENDED
    from ._batch_records import SERVICE_STATUSES as SERVICE_STATUSES
    from ._batch_records import BatchAnswer as BatchAnswer
    from ._batch_records import BatchCounts as BatchCounts
    from ._batch_records import BatchRecord as BatchRecord
    from ._batch_records import BatchStatus as BatchStatus
    from ._batch_records import BatchTally as BatchTally
    from ._batch_records import ServiceStatus as ServiceStatus
    from ._batch_records import answers_path as answers_path
    from ._batch_records import record_path as record_path
    from ._batch_records import tally as tally
    from ._chat_records import AnswerParsed as AnswerParsed
    from ._chat_records import ChatRecord as ChatRecord
    from ._chat_records import ContentFilteredEvent as ContentFilteredEvent
    from ._chat_records import CriticUnparseableEvent as CriticUnparseableEvent
    from ._chat_records import DecisionParsed as DecisionParsed
    from ._chat_records import ErrorEvent as ErrorEvent
    from ._chat_records import EventRecord as EventRecord
    from ._chat_records import ImagesDroppedEvent as ImagesDroppedEvent
    from ._chat_records import ImagesWithheldEvent as ImagesWithheldEvent
    from ._chat_records import InterpreterSkippedEvent as InterpreterSkippedEvent
    from ._chat_records import MaxTokensReachedEvent as MaxTokensReachedEvent
    from ._chat_records import MessageRecord as MessageRecord
    from ._chat_records import RollbackEvent as RollbackEvent
    from ._chat_records import SolverUnparsedEvent as SolverUnparsedEvent
    from ._chat_records import StopEvent as StopEvent
    from ._chat_records import TokenRecord as TokenRecord
    from ._chat_records import TurnInProgress as TurnInProgress
    from ._chat_records import TurnStartRecord as TurnStartRecord
    from ._chat_records import VerdictParsed as VerdictParsed
    from ._run_files import iter_result_rows as iter_result_rows
    from ._run_files import parsed as parsed
    from ._run_files import read_manifest as read_manifest
    from ._run_files import read_result_rows as read_result_rows
    from ._run_files import read_run as read_run
    from ._run_files import read_summary as read_summary
    from ._run_files import read_transcript as read_transcript
    from ._run_files import read_transcript_from as read_transcript_from
    from ._run_files import write_manifest as write_manifest
    from ._run_files import write_record as write_record
    from ._safe_paths import belongs_to as belongs_to
    from ._safe_paths import checked_reference as checked_reference
    from ._safe_paths import child_folder as child_folder
    from ._safe_paths import inside as inside
    from ._safe_paths import outside_paths_allowed as outside_paths_allowed
    from ._safe_paths import problem_folder as problem_folder
    from ._safe_paths import safe_component as safe_component
    from ._schema import IMAGES_DIR as IMAGES_DIR
    from ._schema import MANIFEST_FILE as MANIFEST_FILE
    from ._schema import NO_REGENERATION as NO_REGENERATION
    from ._schema import NO_REVIEWER as NO_REVIEWER
    from ._schema import NO_ROLLBACK_ALLOWED as NO_ROLLBACK_ALLOWED
    from ._schema import NO_USABLE_REVIEW as NO_USABLE_REVIEW
    from ._schema import NOT_A_STEP as NOT_A_STEP
    from ._schema import PROBLEMS_DIR as PROBLEMS_DIR
    from ._schema import RESULTS_FILE as RESULTS_FILE
    from ._schema import RUN_FILE as RUN_FILE
    from ._schema import SUMMARY_FILE as SUMMARY_FILE
    from ._schema import TRANSCRIPT_FILE as TRANSCRIPT_FILE
    from ._schema import TURN_FILE as TURN_FILE
    from ._schema import USER_PROXY_ROLE as USER_PROXY_ROLE
    from ._schema import AnswerSource as AnswerSource
    from ._schema import CallUsage as CallUsage
    from ._schema import DecisionKind as DecisionKind
    from ._schema import Evaluation as Evaluation
    from ._schema import FlowRecord as FlowRecord
    from ._schema import ImageInfo as ImageInfo
    from ._schema import Manifest as Manifest
    from ._schema import ModelRecord as ModelRecord
    from ._schema import ModelSent as ModelSent
    from ._schema import ProblemRecord as ProblemRecord
    from ._schema import ResultRow as ResultRow
    from ._schema import ResultStatus as ResultStatus
    from ._schema import RoleUsage as RoleUsage
    from ._schema import RollbackBy as RollbackBy
    from ._schema import RollbackRecord as RollbackRecord
    from ._schema import RunRecord as RunRecord
    from ._schema import RunStatus as RunStatus
    from ._schema import SampleRecord as SampleRecord
    from ._schema import Score as Score
    from ._schema import SelectionRecord as SelectionRecord
    from ._schema import SentSettings as SentSettings
    from ._schema import SettingsChange as SettingsChange
    from ._schema import StopReason as StopReason
    from ._schema import TeamRecord as TeamRecord
    from ._schema import Usage as Usage
    from ._schema import VerdictRecord as VerdictRecord
    from ._schema import dumped as dumped
    from ._schema import feedback_targets as feedback_targets
    from ._settings_record import DataFingerprint as DataFingerprint
    from ._settings_record import ImageSettings as ImageSettings
    from ._settings_record import LimitSettings as LimitSettings
    from ._settings_record import LocalSettings as LocalSettings
    from ._settings_record import ModelSettings as ModelSettings
    from ._settings_record import PromptSettings as PromptSettings
    from ._settings_record import ReviewSettings as ReviewSettings
    from ._settings_record import StepSettings as StepSettings
    from ._settings_record import TeamSettings as TeamSettings
    from ._settings_record import VerdictSettings as VerdictSettings
    from ._summary import AverageSummary as AverageSummary
    from ._summary import SubsetSummary as SubsetSummary
    from ._summary import Summary as Summary

# name → the private module that defines it, imported on first use (PEP 562)
_EXPORTS: dict[str, str] = {
    'AnswerParsed': '_chat_records',
    'AnswerSource': '_schema',
    'AverageSummary': '_summary',
    'BATCHES_DIR': '_batch_records',
    'BatchAnswer': '_batch_records',
    'BatchCounts': '_batch_records',
    'BatchRecord': '_batch_records',
    'BatchStatus': '_batch_records',
    'BatchTally': '_batch_records',
    'CallUsage': '_schema',
    'ChatRecord': '_chat_records',
    'ContentFilteredEvent': '_chat_records',
    'CriticUnparseableEvent': '_chat_records',
    'DataFingerprint': '_settings_record',
    'DecisionKind': '_schema',
    'DecisionParsed': '_chat_records',
    'ENDED': '_batch_records',
    'ErrorEvent': '_chat_records',
    'Evaluation': '_schema',
    'EventRecord': '_chat_records',
    'FlowRecord': '_schema',
    'IMAGES_DIR': '_schema',
    'ImageInfo': '_schema',
    'ImageSettings': '_settings_record',
    'ImagesDroppedEvent': '_chat_records',
    'ImagesWithheldEvent': '_chat_records',
    'InterpreterSkippedEvent': '_chat_records',
    'LimitSettings': '_settings_record',
    'LocalSettings': '_settings_record',
    'MANIFEST_FILE': '_schema',
    'Manifest': '_schema',
    'MaxTokensReachedEvent': '_chat_records',
    'MessageRecord': '_chat_records',
    'ModelRecord': '_schema',
    'ModelSent': '_schema',
    'ModelSettings': '_settings_record',
    'NO_REGENERATION': '_schema',
    'NO_REVIEWER': '_schema',
    'NO_ROLLBACK_ALLOWED': '_schema',
    'NO_USABLE_REVIEW': '_schema',
    'NOT_A_STEP': '_schema',
    'PROBLEMS_DIR': '_schema',
    'ProblemRecord': '_schema',
    'PromptSettings': '_settings_record',
    'RESULTS_FILE': '_schema',
    'RUN_FILE': '_schema',
    'ResultRow': '_schema',
    'ResultStatus': '_schema',
    'ReviewSettings': '_settings_record',
    'RoleUsage': '_schema',
    'RollbackBy': '_schema',
    'RollbackEvent': '_chat_records',
    'RollbackRecord': '_schema',
    'RunRecord': '_schema',
    'RunStatus': '_schema',
    'SERVICE_STATUSES': '_batch_records',
    'SUMMARY_FILE': '_schema',
    'SampleRecord': '_schema',
    'Score': '_schema',
    'SelectionRecord': '_schema',
    'SentSettings': '_schema',
    'ServiceStatus': '_batch_records',
    'SettingsChange': '_schema',
    'SolverUnparsedEvent': '_chat_records',
    'StepSettings': '_settings_record',
    'StopEvent': '_chat_records',
    'StopReason': '_schema',
    'SubsetSummary': '_summary',
    'Summary': '_summary',
    'TRANSCRIPT_FILE': '_schema',
    'TURN_FILE': '_schema',
    'TeamRecord': '_schema',
    'TeamSettings': '_settings_record',
    'TokenRecord': '_chat_records',
    'TurnInProgress': '_chat_records',
    'TurnStartRecord': '_chat_records',
    'USER_PROXY_ROLE': '_schema',
    'Usage': '_schema',
    'VerdictParsed': '_chat_records',
    'VerdictRecord': '_schema',
    'VerdictSettings': '_settings_record',
    'answers_path': '_batch_records',
    'belongs_to': '_safe_paths',
    'checked_reference': '_safe_paths',
    'child_folder': '_safe_paths',
    'dumped': '_schema',
    'feedback_targets': '_schema',
    'inside': '_safe_paths',
    'iter_result_rows': '_run_files',
    'outside_paths_allowed': '_safe_paths',
    'parsed': '_run_files',
    'problem_folder': '_safe_paths',
    'read_manifest': '_run_files',
    'read_result_rows': '_run_files',
    'read_run': '_run_files',
    'read_summary': '_run_files',
    'read_transcript': '_run_files',
    'read_transcript_from': '_run_files',
    'record_path': '_batch_records',
    'safe_component': '_safe_paths',
    'tally': '_batch_records',
    'write_manifest': '_run_files',
    'write_record': '_run_files',
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, globals())
