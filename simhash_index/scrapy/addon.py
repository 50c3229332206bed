"""The Scrapy add-on (Scrapy 2.10+): `ADDONS = {"simhash_index.scrapy.Addon": 100}` installs
everything in one line.

It adds the dedup pipeline, the log formatter, the progress line (SimhashLogStats) and the
opt-in skip middleware (off until SIMHASH_SKIP_DUPLICATES = True). A component you list
yourself keeps your priority, and a LOG_FORMATTER of your own wins. The `crawl` command
that exits 1 on failure cannot come from an add-on (Scrapy loads commands before add-ons):
set COMMANDS_MODULE = "simhash_index.scrapy.commands" for it.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

PIPELINE = "simhash_index.scrapy.SimhashDedupPipeline"
LOG_FORMATTER = "simhash_index.scrapy.SimhashLogFormatter"
LOG_STATS = "simhash_index.scrapy.SimhashLogStats"
SKIP_MIDDLEWARE = "simhash_index.scrapy.SimhashSkipDuplicatesMiddleware"

# Before the storage pipelines a project numbers from 300 up: dropped items must not reach them.
PIPELINE_PRIORITY = 200
# Beside Scrapy's LogStats (0), before any request is sent: first of the downloader middlewares
# after the offsite filter (50), so a skipped page does not even cost a robots.txt lookup (100).
LOG_STATS_PRIORITY = 0
SKIP_MIDDLEWARE_PRIORITY = 60


class Addon:
    """Installs simhash-index in a Scrapy project: see the module docstring."""

    def update_settings(self, settings: BaseSettings) -> None:
        _set_default_component(settings, "ITEM_PIPELINES", PIPELINE, PIPELINE_PRIORITY)
        _set_default_component(settings, "EXTENSIONS", LOG_STATS, LOG_STATS_PRIORITY)
        _set_default_component(settings, "DOWNLOADER_MIDDLEWARES", SKIP_MIDDLEWARE, SKIP_MIDDLEWARE_PRIORITY)
        settings.set("LOG_FORMATTER", LOG_FORMATTER, priority="addon")


def _set_default_component(settings: BaseSettings, name: str, path: str, priority: int) -> None:
    """Add a component unless the project lists it already (by path or class)."""
    from scrapy.utils.misc import load_object

    listed: Any = settings.getdict(name)
    component = load_object(path)
    if any(key in (path, component) or _loads_to(key, component) for key in listed):
        return
    if hasattr(settings, "set_in_component_priority_dict"):  # Scrapy >= 2.13
        settings.set_in_component_priority_dict(name, component, priority)
    else:
        settings[name][path] = priority


def warn_of_pipelines_before(settings: BaseSettings, pipeline: type) -> None:
    """A warning naming the item pipelines that run before ours: they receive every item,
    duplicates too (a storage pipeline there stores them all)."""
    found = runs_before(settings, "ITEM_PIPELINES", pipeline)
    if found is None or not found[1]:
        return
    ours, before = found
    logger.warning(
        "simhash: %s run before %s (%d) in ITEM_PIPELINES and receive every item, duplicates too: "
        "give a pipeline that stores items a number above %d",
        ", ".join(f"{name} ({priority})" for name, priority in before),
        pipeline.__name__,
        ours,
        ours,
    )


def runs_before(settings: BaseSettings, name: str, component: object) -> tuple[int, list[tuple[str, int]]] | None:
    """Where `component` runs in a priority dict setting (ITEM_PIPELINES): its priority, and the
    components that run before it as (name, priority) in their order; None when it is not listed."""
    listed = {key: priority for key, priority in settings.getwithbase(name).items() if priority is not None}
    ours = next((priority for key, priority in listed.items() if key is component or _loads_to(key, component)), None)
    if ours is None:
        return None
    before = sorted((priority, _named(key)) for key, priority in listed.items() if priority < ours)
    return int(ours), [(key, int(priority)) for priority, key in before]


def _named(key: object) -> str:
    return key if isinstance(key, str) else f"{getattr(key, '__module__', '?')}.{getattr(key, '__qualname__', key)}"


def _loads_to(key: object, component: object) -> bool:
    from scrapy.utils.misc import load_object

    if not isinstance(key, str):
        return False
    try:
        return bool(load_object(key) is component)
    except (ImportError, NameError, ValueError, AttributeError):
        return False
