"""The schema of every file a run writes (typed pydantic models and the vocabularies as Literals),
the typed readers, the one writer of a run folder's files, and the paths inside a run folder
kept inside it. It sits right after settings (the guide's list puts records after orchestration)
because records are made typed where they are made, in model and orchestration, so the schema
must be below both.
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._batch_records import (BATCHES_DIR as BATCHES_DIR, ENDED as ENDED, SERVICE_STATUSES as SERVICE_STATUSES,
                                 BatchAnswer as BatchAnswer, BatchCounts as BatchCounts, BatchRecord as BatchRecord,
                                 BatchStatus as BatchStatus, BatchTally as BatchTally, ServiceStatus as ServiceStatus,
                                 answers_path as answers_path, record_path as record_path, tally as tally)
    from ._chat_records import (AnswerParsed as AnswerParsed, ChatRecord as ChatRecord,
                                ContentFilteredEvent as ContentFilteredEvent,
                                CriticUnparseableEvent as CriticUnparseableEvent, DecisionParsed as DecisionParsed,
                                ErrorEvent as ErrorEvent, EventRecord as EventRecord,
                                ImagesDroppedEvent as ImagesDroppedEvent, ImagesWithheldEvent as ImagesWithheldEvent,
                                InterpreterSkippedEvent as InterpreterSkippedEvent,
                                MaxTokensReachedEvent as MaxTokensReachedEvent, MessageRecord as MessageRecord,
                                RollbackEvent as RollbackEvent, SolverUnparsedEvent as SolverUnparsedEvent,
                                StopEvent as StopEvent, TokenRecord as TokenRecord, TurnInProgress as TurnInProgress,
                                TurnStartRecord as TurnStartRecord, VerdictParsed as VerdictParsed)
    from ._run_files import (iter_result_rows as iter_result_rows, parsed as parsed, read_manifest as read_manifest,
                             read_result_rows as read_result_rows, read_run as read_run, read_summary as read_summary,
                             read_transcript as read_transcript, read_transcript_from as read_transcript_from,
                             write_manifest as write_manifest, write_record as write_record)
    from ._safe_paths import (belongs_to as belongs_to, checked_reference as checked_reference,
                              child_folder as child_folder, inside as inside,
                              outside_paths_allowed as outside_paths_allowed, problem_folder as problem_folder,
                              safe_component as safe_component)
    from ._schema import (IMAGES_DIR as IMAGES_DIR, MANIFEST_FILE as MANIFEST_FILE, NOT_A_STEP as NOT_A_STEP,
                          NO_REGENERATION as NO_REGENERATION, NO_REVIEWER as NO_REVIEWER,
                          NO_ROLLBACK_ALLOWED as NO_ROLLBACK_ALLOWED, NO_USABLE_REVIEW as NO_USABLE_REVIEW,
                          PROBLEMS_DIR as PROBLEMS_DIR, RESULTS_FILE as RESULTS_FILE, RUN_FILE as RUN_FILE,
                          SUMMARY_FILE as SUMMARY_FILE, TRANSCRIPT_FILE as TRANSCRIPT_FILE, TURN_FILE as TURN_FILE,
                          USER_PROXY_ROLE as USER_PROXY_ROLE, AnswerSource as AnswerSource, CallUsage as CallUsage,
                          DecisionKind as DecisionKind, Evaluation as Evaluation, FlowRecord as FlowRecord,
                          ImageInfo as ImageInfo, Manifest as Manifest, ModelRecord as ModelRecord,
                          ModelSent as ModelSent, ProblemRecord as ProblemRecord, ResultRow as ResultRow,
                          ResultStatus as ResultStatus, RoleUsage as RoleUsage, RollbackBy as RollbackBy,
                          RollbackRecord as RollbackRecord, RunRecord as RunRecord, RunStatus as RunStatus,
                          SampleRecord as SampleRecord, Score as Score, SelectionRecord as SelectionRecord,
                          SentSettings as SentSettings, SettingsChange as SettingsChange, StopReason as StopReason,
                          TeamRecord as TeamRecord, Usage as Usage, VerdictRecord as VerdictRecord, dumped as dumped,
                          feedback_targets as feedback_targets)
    from ._verdict_settings import (DataFingerprint as DataFingerprint, ImageSettings as ImageSettings,
                                   LimitSettings as LimitSettings, LocalSettings as LocalSettings,
                                   ModelSettings as ModelSettings, PromptSettings as PromptSettings,
                                   ReviewSettings as ReviewSettings, StepSettings as StepSettings,
                                   TeamSettings as TeamSettings, VerdictSettings as VerdictSettings)
    from ._summary import AverageSummary as AverageSummary, SubsetSummary as SubsetSummary, Summary as Summary

__getattr__, __dir__ = lazy_exports(globals())
