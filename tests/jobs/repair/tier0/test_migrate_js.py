"""Tier 0's import migration for JavaScript/TypeScript across renamed or moved npm exports."""

from __future__ import annotations

from jobs.repair.depupdate.apidiff import ApiChange
from jobs.repair.tier0.migrate import migrate_files
from jobs.repair.tier0.migrate_js import migrate_js_text

RENAMED = ApiChange("renamed", "graphql", "findDeprecatedUsages", "graphql.validate")
MOVED = ApiChange("moved", "lib", "helper", "lib/sub.helper")


def test_a_renamed_export_is_imported_under_its_old_local_name() -> None:
    src = (
        "import { parse, findDeprecatedUsages } from 'graphql';\n"
        'import {print} from "graphql";\n'
        "const { findDeprecatedUsages: fdu, buildSchema } = require('graphql');\n"
        "findDeprecatedUsages(schema, doc);\n"
    )
    out, sites = migrate_js_text(src, [RENAMED])
    assert sites == 2
    assert out == (
        "import { parse, validate as findDeprecatedUsages } from 'graphql';\n"
        'import {print} from "graphql";\n'  # untouched, formatting and all
        "const { validate: fdu, buildSchema } = require('graphql');\n"
        "findDeprecatedUsages(schema, doc);\n"
    )


def test_a_moved_export_is_split_into_an_import_from_its_new_module() -> None:
    out, sites = migrate_js_text(
        "import { a, helper as h } from 'lib';\nimport { helper } from 'lib';\n", [MOVED]
    )
    assert sites == 2
    assert (
        out
        == "import { a } from 'lib';\nimport { helper as h } from 'lib/sub';\nimport { helper } from 'lib/sub';\n"
    )
    assert migrate_js_text("import { helper } from 'lib2';\n", [MOVED]) == (
        "import { helper } from 'lib2';\n",
        0,
    )


def test_migrate_files_covers_ts_files_beside_python_ones() -> None:
    files = {"src/a.ts": "import type { helper } from 'lib'\n", "README.md": "import { helper } from 'lib'"}
    edits, sites = migrate_files([MOVED], files, files.get)
    assert sites == 1 and [e.path for e in edits] == ["src/a.ts"]
    assert files["src/a.ts"].replace(edits[0].old, edits[0].new) == "import type { helper } from 'lib/sub';\n"


def test_a_default_export_now_exported_by_name_keeps_the_local_name() -> None:
    """lru-cache 7 -> 10: ``export = LRUCache`` became ``export class LRUCache``."""
    change = ApiChange("renamed", "lru-cache", "default", "lru-cache.LRUCache")
    src = (
        "const LRU = require('lru-cache')\n"
        'import Cache from "lru-cache";\n'
        "const { other } = require('lru-cache')\n"
        "const x = require('lru-cache-other')\n"
        "const cache = new LRU({ max: 10 })\n"
    )
    out, sites = migrate_js_text(src, [change])
    assert sites == 2
    assert out == (
        "const { LRUCache: LRU } = require('lru-cache')\n"
        'import { LRUCache as Cache } from "lru-cache";\n'
        "const { other } = require('lru-cache')\n"  # not the default: untouched
        "const x = require('lru-cache-other')\n"
        "const cache = new LRU({ max: 10 })\n"
    )


def test_a_required_member_follows_its_export_to_the_new_module() -> None:
    """msw 1 -> 2: ``setupWorker`` moved to ``msw/browser``; compiled code reads it off require()."""
    change = ApiChange("moved", "msw", "setupWorker", "msw/browser.setupWorker")
    src = "var setupWorker = require('msw').setupWorker;\nvar x = require('msw').setupWorkerX;\n"
    out, sites = migrate_js_text(src, [change])
    assert (out, sites) == (
        "var setupWorker = require('msw/browser').setupWorker;\nvar x = require('msw').setupWorkerX;\n",
        1,
    )
