from profiles.models import Profile
from profiles.names import display_name, mention


def test_nickname_wins():
    assert display_name(Profile("ann@example.com", " Annie ")) == "Annie"


def test_blank_nickname_falls_back_to_email():
    assert display_name(Profile("bob@example.com", "  ")) == "bob"


def test_missing_nickname_falls_back_to_email():
    assert mention(Profile("cyd@example.com")) == "@cyd"
