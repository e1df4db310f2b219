"""The exported API difference of an npm package from its type declarations."""

from __future__ import annotations

from jobs.repair.depupdate.npmapi import diff_npm, read_npm_api

OLD = {
    "package/package.json": '{"name": "lib", "types": "./dist/index.d.ts"}',
    "package/dist/index.d.ts": (
        "export { parse, print as printAst } from './language';\n"
        "export * from './util';\n"
        "export {\n  /** a block comment with } inside */\n  Thing,\n  // a line comment\n  type Options,\n} from './types';\n"
        "export default function main(): void;\n"
    ),
    "package/dist/language.d.ts": "export declare function parse(s: string): Node;\nexport declare function print(n: Node): string;\n",
    "package/dist/util.d.ts": (
        "/**\n * @deprecated Use `formatMessage` instead.\n */\nexport declare function formatError(e: Error): string;\n"
        "export declare function formatMessage(e: Error): string;\nexport declare const helper: number;\n"
    ),
    "package/dist/types.d.ts": "export interface Thing {}\nexport type Options = {};\n",
    "package/dist/extra/index.d.ts": "export declare class Extra {}\n",
}
NEW = {
    "package/package.json": '{"name": "lib", "types": "./dist/index.d.ts"}',
    "package/dist/index.d.ts": (
        "export { parse } from './language';\nexport * from './util';\nexport type { Thing, Options } from './types';\n"
    ),
    "package/dist/language.d.ts": "export declare function parse(s: string): Node;\n",
    "package/dist/util.d.ts": "export declare function formatMessage(e: Error): string;\n",
    "package/dist/types.d.ts": "export interface Thing {}\nexport type Options = {};\n",
    "package/dist/sub/index.d.ts": "export declare const helper: number;\n",
}


def test_exports_are_followed_through_relative_re_exports_and_comments_are_ignored() -> None:
    api = read_npm_api(OLD, "lib")
    assert set(api) == {"lib", "lib/dist/extra"}
    assert set(api["lib"]) == {
        "parse",
        "printAst",
        "formatError",
        "formatMessage",
        "helper",
        "Thing",
        "Options",
        "default",
    }
    assert api["lib"]["formatError"] == ["formatMessage"]


def test_removed_renamed_and_moved_exports() -> None:
    found = {c.qualified: c.describe() for c in diff_npm(OLD, NEW, "lib")}
    assert found == {
        "lib.default": "lib.default: removed",
        "lib.formatError": "lib.formatError: renamed to lib.formatMessage (@deprecated note)",
        "lib.helper": "lib.helper: moved to lib/dist/sub.helper (exported there now)",
        "lib.printAst": "lib.printAst: removed",
        "lib/dist/extra": "lib/dist/extra: module removed",
    }
    assert diff_npm({"package/package.json": "{}"}, {}, "x") == []


def test_public_modules_come_from_the_exports_map_and_export_assign_is_the_default() -> None:
    """msw 2 puts ``setupWorker`` behind ``"./browser"`` (a file in lib/browser); lru-cache 10
    turned ``export = LRUCache`` into a named export reached only through ``exports``."""
    old = {
        "package/package.json": '{"types": "./lib/index.d.ts", "exports": {".": {"default": "./lib/index.js"}}}',
        "package/lib/index.d.ts": "export declare function setupWorker(): void;\n"
        "declare class LRUCache {}\nexport = LRUCache\n",
    }
    new = {
        "package/package.json": (
            '{"exports": {".": {"require": {"types": "./dist/cjs/index.d.ts"}}, '
            '"./browser": {"node": null, "types": "./lib/browser/index.d.ts"}, "./package.json": "./package.json"}}'
        ),
        "package/dist/cjs/index.d.ts": "export declare class LRUCache {}\n",
        "package/lib/browser/index.d.ts": "export declare function setupWorker(): void;\n",
        "package/lib/internal/index.d.ts": "export declare const hidden: number;\n",
    }
    assert read_npm_api(old, "p") == {"p": {"setupWorker": [], "default": ["LRUCache"]}}
    assert set(read_npm_api(new, "p")) == {"p", "p/browser"}  # lib/internal is not importable
    moves = {(c.kind, c.qualified, c.replacement) for c in diff_npm(old, new, "p")}
    assert moves == {
        ("moved", "p.setupWorker", "p/browser.setupWorker"),
        ("renamed", "p.default", "p.LRUCache"),
    }
