from db.vocabulary import IN_HAND, REPLAYABLE, Status
from graphql_schema.types import DeliveryStatus


def test_the_api_enum_has_the_statuses_by_name_and_value():
    assert [(s.name, s.value) for s in DeliveryStatus] == [(s.name, s.value) for s in Status]
    assert all(DeliveryStatus(status) == status for status in Status)


def test_a_status_is_its_column_value():
    assert Status("failed") is Status.FAILED
    assert f"{Status.PENDING}" == "pending" == Status.PENDING
    assert {"pending": 1}[Status.PENDING] == 1


def test_the_groups_of_statuses():
    assert set(REPLAYABLE) == {Status.FAILED, Status.PENDING}
    assert set(IN_HAND) == {Status.PENDING, Status.DELIVERING}
