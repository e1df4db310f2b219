from mailer.transport import Message, send_email


def order_shipped(email: str, order_id: int) -> Message:
    subject = f"Order #{order_id} shipped"
    body = "Your order is on its way."
    return send_email(email, subject, body)
