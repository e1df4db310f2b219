"""Upload feeds through a multipart helper library (not installed in this environment)."""

import requests_toolbelt_xyz


def part_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def encoder(fields: dict[str, str]) -> object:
    return requests_toolbelt_xyz.MultipartEncoder(fields=fields)
