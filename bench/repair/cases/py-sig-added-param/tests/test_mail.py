from mailer.alerts import disk_alert
from mailer.notify import order_shipped
from mailer.transport import NOREPLY_ADDRESS


def test_disk_alert():
    msg = disk_alert(93)
    assert msg.to == "ops@shop.example"
    assert msg.sender == NOREPLY_ADDRESS


def test_order_shipped():
    msg = order_shipped("ann@example.com", 42)
    assert msg.subject == "Order #42 shipped"
    assert msg.sender == NOREPLY_ADDRESS
