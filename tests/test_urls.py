"""What of a URL may be recorded or shown: userinfo and signed query parameters never, the rest as typed."""

import pytest

from ganforge.errors import UserError
from ganforge.urls import REDACTED, path_name, public_text, public_url, public_value

PLANTED = "PLANTED5ecret"


@pytest.mark.parametrize(
    "url",
    [
        f"http://user:{PLANTED}@host:8080/data/",
        f"https://{PLANTED}@host/data/",
        f"https://bucket.s3.amazonaws.com/d/?X-Amz-Algorithm=AWS4&X-Amz-Credential={PLANTED}&X-Amz-Signature={PLANTED}",
        f"https://storage.googleapis.com/b/o?X-Goog-Signature={PLANTED}",
        f"https://acct.blob.core.windows.net/c/?sv=2020&sig={PLANTED}",
        f"https://cdn.example/d?Signature={PLANTED}&Key-Pair-Id={PLANTED}&Policy={PLANTED}",
        f"http://host/d?token={PLANTED}",
        f"http://host/d?access_token={PLANTED}&page=2",
        f"http://host/d?apiKey={PLANTED}",
        f"http://host/d?PASSWORD={PLANTED}",
        f"http://host/d#access_token={PLANTED}",
        f"s3://{PLANTED}:{PLANTED}@bucket/shards/",
        f"http://user:{PLANTED}@[::1]:99999/x",  # a port out of range: nothing of the netloc is kept
    ],
)
def test_secrets_never_survive(url):
    shown = public_url(url)
    assert PLANTED not in shown and PLANTED.lower() not in shown.lower()
    assert PLANTED not in public_text(f"error: cannot open {url}: refused")


def test_what_is_not_secret_stays_as_typed():
    assert public_url("http://host:8080/data/shards/") == "http://host:8080/data/shards/"
    assert public_url("s3://bucket/a/b/") == "s3://bucket/a/b/"
    assert public_url("/local/path/data.zip") == "/local/path/data.zip"
    assert public_url("http://[::1]:81/d?page=2&versionId=7") == "http://[::1]:81/d?page=2&versionId=7"
    assert public_url("http://u:p@host/d?page=2&sig=x") == f"http://host/d?page=2&sig={REDACTED}"
    assert public_url("sqlite:////abs/sweep/study.db") == "sqlite:////abs/sweep/study.db"  # no host, absolute path
    assert public_url("postgresql://ann:pw@db:5432/s") == "postgresql://db:5432/s"


def test_text_quoting_several_urls_has_each_made_public():
    text = f"GET 'http://a:{PLANTED}@h1/x' then \"https://h2/y?token={PLANTED}\" failed"
    assert public_text(text) == f"GET 'http://h1/x' then \"https://h2/y?token={REDACTED}\" failed"


def test_a_sentence_keeps_its_punctuation_and_hosts_outside_the_url():
    text = f"--data: http://127.0.0.1:8080: refused; see http://u:{PLANTED}@h/x?sig={PLANTED}, then (http://h/y)."
    assert public_text(text) == (
        f"--data: http://127.0.0.1:8080: refused; see http://h/x?sig={REDACTED}, then (http://h/y)."
    )


def test_a_recorded_structure_has_every_url_made_public_and_keeps_its_shape():
    recorded = {"data": {"path": f"http://u:{PLANTED}@h/a b/?token={PLANTED}", "count": 3}, "list": ["x", None]}
    recorded["tuple"] = (f"note: s3://{PLANTED}@bucket/x", 1.5)
    assert public_value(recorded) == {
        "data": {"path": f"http://h/a b/?token={REDACTED}", "count": 3},
        "list": ["x", None],
        "tuple": ("note: s3://bucket/x", 1.5),
    }


@pytest.mark.parametrize(
    "location, name",
    [
        (f"http://u:{PLANTED}@host/data/shards/?X-Amz-Signature={PLANTED}", "shards"),
        (f"https://u:{PLANTED}@host", ""),
        (f"https://host/?sig={PLANTED}", ""),
        (f"http://[::1/x#{PLANTED}", "x"),  # too damaged for urlsplit
        ("s3://bucket/a/b/", "b"),
        ("/local/folder/", "folder"),
        ("relative", "relative"),
    ],
)
def test_a_name_from_a_url_is_its_last_path_segment(location, name):
    assert path_name(location) == name


def test_a_user_error_never_quotes_a_secret():
    error = UserError(f"--data http://u:{PLANTED}@h/x/: missing", f"token in http://h/?token={PLANTED}")
    assert PLANTED not in str(error) and error.problems == [
        "--data http://h/x/: missing",
        f"token in http://h/?token={REDACTED}",
    ]
