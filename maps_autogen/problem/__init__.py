"""A problem and its images (read, fetched from public addresses only, bounded), and what every
benchmark's data side builds on: the task protocol, rows read into problems, and the hub's data
sets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_names

if TYPE_CHECKING:
    from ._fetch import private_urls_allowed as private_urls_allowed
    from ._hub import check_hub as check_hub
    from ._images import ImageInput as ImageInput
    from ._images import ImageLimits as ImageLimits
    from ._images import image_limits as image_limits
    from ._problem import Problem as Problem
    from ._problem import build_problem as build_problem
    from ._problem import load_problem_file as load_problem_file
    from ._rows import check_image_reference as check_image_reference
    from ._rows import check_row_image_references as check_row_image_references
    from ._rows import config_rows as config_rows
    from ._rows import image_from_field as image_from_field
    from ._rows import image_size_from_field as image_size_from_field
    from ._rows import local_rows as local_rows
    from ._rows import numbered_image_fields as numbered_image_fields
    from ._rows import numbered_image_problem as numbered_image_problem
    from ._rows import required as required
    from ._rows import rows_for as rows_for
    from ._tasks import AnswerFormats as AnswerFormats
    from ._tasks import EvalItem as EvalItem
    from ._tasks import Row as Row
    from ._tasks import Subset as Subset
    from ._tasks import Task as Task
    from ._tasks import available_subsets as available_subsets
    from ._tasks import boxed_contents as boxed_contents
    from ._tasks import find_subsets as find_subsets
    from ._tasks import load_answer_formats as load_answer_formats
    from ._tasks import one_line as one_line
    from ._tasks import spread_limit as spread_limit

# name → the private module that defines it, imported on first use (PEP 562)
_EXPORTS: dict[str, str] = {
    'AnswerFormats': '_tasks',
    'EvalItem': '_tasks',
    'ImageInput': '_images',
    'ImageLimits': '_images',
    'Problem': '_problem',
    'Row': '_tasks',
    'Subset': '_tasks',
    'Task': '_tasks',
    'available_subsets': '_tasks',
    'boxed_contents': '_tasks',
    'build_problem': '_problem',
    'check_hub': '_hub',
    'check_image_reference': '_rows',
    'check_row_image_references': '_rows',
    'config_rows': '_rows',
    'find_subsets': '_tasks',
    'image_from_field': '_rows',
    'image_limits': '_images',
    'image_size_from_field': '_rows',
    'load_answer_formats': '_tasks',
    'load_problem_file': '_problem',
    'local_rows': '_rows',
    'numbered_image_fields': '_rows',
    'numbered_image_problem': '_rows',
    'one_line': '_tasks',
    'private_urls_allowed': '_fetch',
    'required': '_rows',
    'rows_for': '_rows',
    'spread_limit': '_tasks',
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, globals())
