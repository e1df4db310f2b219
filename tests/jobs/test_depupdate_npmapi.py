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
