"""What of a URL may be recorded or shown: userinfo and signed query parameters never, the rest as typed."""

import pytest

from ganforge.urls import REDACTED, public_text, public_url

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


def test_text_quoting_several_urls_has_each_made_public():
    text = f"GET 'http://a:{PLANTED}@h1/x' then \"https://h2/y?token={PLANTED}\" failed"
    assert public_text(text) == f"GET 'http://h1/x' then \"https://h2/y?token={REDACTED}\" failed"
