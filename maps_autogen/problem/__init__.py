"""A problem and its images (read, fetched from public addresses only, bounded), and what every
benchmark's data side builds on: the task protocol, rows read into problems, and the hub's data
sets.
"""

from typing import TYPE_CHECKING

from maps_autogen._util._lazy import lazy_exports

if TYPE_CHECKING:
    from ._fetch import private_urls_allowed as private_urls_allowed
    from ._hub import check_hub as check_hub
    from ._images import ImageInput as ImageInput, ImageLimits as ImageLimits, image_limits as image_limits
    from ._problem import Problem as Problem, build_problem as build_problem, load_problem_file as load_problem_file
    from ._rows import (check_image_reference as check_image_reference,
                        check_row_image_references as check_row_image_references, config_rows as config_rows,
                        image_from_field as image_from_field, image_size_from_field as image_size_from_field,
                        local_rows as local_rows, numbered_image_fields as numbered_image_fields,
                        numbered_image_problem as numbered_image_problem, required as required, rows_for as rows_for)
    from ._tasks import (AnswerFormats as AnswerFormats, EvalItem as EvalItem, Row as Row, Subset as Subset,
                         Task as Task, available_subsets as available_subsets, boxed_contents as boxed_contents,
                         find_subsets as find_subsets, load_answer_formats as load_answer_formats, one_line as one_line,
                         spread_limit as spread_limit)

__getattr__, __dir__ = lazy_exports(globals())
