import re

import pytest

from recall.errors import RecallError
from recall.queryset import QueryRow, format_queries, parse_queries

HEAD = b"repo\tquery\ttype\tsource\n"
REPOS = {"gin"}


def parse(data: bytes):
    return parse_queries(data, "q.tsv", REPOS)


def test_round_trip():
    rows = [QueryRow("gin", "ctxjs", "abbr3", "ContextJSON"), QueryRow("gin", "a b", "hand", "")]
    assert parse(format_queries(rows)) == rows


def test_bom_and_crlf_are_accepted_cleanly():
    data = b"\xef\xbb\xbf" + HEAD.replace(b"\n", b"\r\n") + b"gin\tq\tabbr3\tName\r\n"
    assert parse(data) == [QueryRow("gin", "q", "abbr3", "Name")]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"gin\tq\tabbr3\n", "q.tsv:2: expected 4"),
        (b"gin\tq\tabbr3\tN\tx\n", "q.tsv:2: expected 4"),
        (b"rails\tq\tabbr3\tN\n", "q.tsv:2: unknown repo 'rails'"),
        (b"gin\tq\tweird\tN\n", "q.tsv:2: unknown type 'weird'"),
        (b"gin\t\tabbr3\tN\n", "q.tsv:2: empty query"),
        (b"gin\tq\tabbr3\tN\ngin\tq\tabbr3\tN\n", "q.tsv:3: duplicate of line 2"),
        (b"gin\tq\xff\tabbr3\tN\n", "q.tsv:2: not valid UTF-8"),
        (b"gin\tq\thand\tN\n", "q.tsv:2: a hand row has no source"),
    ],
)
def test_bad_rows_name_the_file_and_line(body, message):
    with pytest.raises(RecallError, match=re.escape(message)):
        parse(HEAD + body)


def test_wrong_header_is_refused():
    with pytest.raises(RecallError, match=re.escape("q.tsv:1: header")):
        parse(b"repo\tquery\tsource\n")
