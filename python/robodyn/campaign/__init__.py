"""The campaign layer: simulation campaigns on Dask (campaigns: Campaign; samplers; schema:
the campaign file declared; config: the names and limits; results; cluster: the Dask client;
command: robodyn campaign) and chunked datasets of dynamics quantities (datasets, chunks,
writers, dataset_files). ``robodyn.campaign`` gathers the campaigns' public names. Needs
msgspec (of the ``campaign`` extra) to import, the rest of the extra only when a campaign or
dataset runs. Imports the simulation layer and below."""

from .campaigns import *  # noqa: F401,F403
from .campaigns import __all__ as _campaigns
from .command import run_command

__all__ = list(_campaigns) + ["run_command"]
