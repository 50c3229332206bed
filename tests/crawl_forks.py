"""Run as a script by crawling.py: a process that has imported Scrapy, forking one `scrapy` command
per request, so that a test's crawl does not spend a second of CPU importing Scrapy again.

Only third-party modules are imported ahead: the child imports simhash_index, the project's
settings and its spiders itself, as a `python -m scrapy` process would. A request is a JSON line
{argv, cwd, env, stdout, stderr} (the two streams go to files); the answer is a JSON line
{status}, the exit status as subprocess reports it (negative: the signal that ended it).
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import sys
import traceback

from scrapy.utils.misc import walk_modules

# Third-party modules only: what `scrapy crawl` imports before it reads the project's settings
PRELOADED = ("scrapy.crawler", "scrapy.core.engine", "scrapy.core.downloader.handlers.http11", "sqlalchemy")
for name in PRELOADED:
    importlib.import_module(name)
walk_modules("scrapy.commands")  # what `scrapy` imports to list its commands


def run_in_child(request: dict) -> None:
    """In the forked child: become the command's process, run it, exit with its status."""
    os.chdir(request["cwd"])
    sys.path[0] = os.getcwd()  # where `python -m` looks first: the project's own modules
    os.environ.clear()
    os.environ.update(request["env"])
    with open(os.devnull, "rb") as nothing:
        os.dup2(nothing.fileno(), 0)
    for descriptor, path in ((1, request["stdout"]), (2, request["stderr"])):
        with open(path, "wb") as stream:
            os.dup2(stream.fileno(), descriptor)
    sys.argv = request["argv"]
    try:
        runpy.run_module("scrapy", run_name="__main__", alter_sys=True)
    except SystemExit:
        raise
    except BaseException:
        traceback.print_exc()
        raise SystemExit(1) from None
    raise SystemExit(0)


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            run_in_child(request)  # never returns: SystemExit ends the child as the interpreter does
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"status": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    main()
