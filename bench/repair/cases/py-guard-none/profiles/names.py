"""How users are shown in the UI."""

from profiles.models import Profile


def display_name(profile: Profile) -> str:
    nickname = profile.nickname.strip()
    return nickname or profile.email.split("@")[0]


def mention(profile: Profile) -> str:
    return "@" + display_name(profile)
