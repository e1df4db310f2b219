"""JSON-ready views."""

from api.paging import paginate

USERS = [{"id": i, "name": f"user{i}"} for i in range(1, 51)]


def list_users(page: int = 1, per_page: int = 20) -> dict[str, object]:
    rows = paginate(USERS, page=page, per_page=per_page)
    return {"page": page, "count": len(rows), "ids": [r["id"] for r in rows]}
