from api.views import list_users


def test_list_users_page_size():
    data = list_users(page=2, per_page=10)
    assert data["count"] == 10
    assert data["ids"][0] == 11
