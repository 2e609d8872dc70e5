"""The campaign layer: simulation campaigns on Dask (campaigns: Campaign, the samplers,
read_results) and chunked datasets of dynamics quantities (datasets, dataset_files).
``robodyn.campaign`` gathers campaigns' public names. Needs the ``campaign`` extra only
when a campaign or dataset runs. Imports the simulation layer and below."""

from .campaigns import *  # noqa: F401,F403
from .campaigns import __all__ as _campaigns

__all__ = list(_campaigns)
