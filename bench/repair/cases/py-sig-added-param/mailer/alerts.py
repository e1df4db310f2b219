from mailer.transport import NOREPLY_ADDRESS, Message, send_email

ADMIN = "ops@shop.example"


def disk_alert(percent_used: int) -> Message:
    return send_email(ADMIN, "Disk almost full", f"{percent_used}% used", NOREPLY_ADDRESS)
