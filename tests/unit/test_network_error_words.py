"""A network failure is said in words an on-call engineer reads, never as a Python repr."""

import requests
from urllib3.exceptions import ProtocolError

from service.dispatch.sender import _reason


def test_a_connection_reset_is_said_in_words_not_as_a_tuple():
    error = requests.exceptions.ConnectionError(ProtocolError(
        "Connection aborted.", ConnectionResetError(104, "Connection reset by peer")))
    assert _reason(error) == "Connection aborted: Connection reset by peer"
