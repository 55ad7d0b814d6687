"""moto's standalone server with AWS S3's request checks that moto leaves out.

moto verifies SigV4 signatures (once IAM authentication is on) but takes a PUT or POST without
Content-Length (an empty PutObject, CreateMultipartUpload) and never compares a body with the
checksums sent beside it. AWS S3 refuses those requests; so does this server, before moto sees
them, with the answers AWS S3 gives:

  PUT/POST without Content-Length (or with Transfer-Encoding: chunked)  411 MissingContentLength
  Content-MD5 that is not a base64 MD5 / that differs from the body     400 InvalidDigest / BadDigest
  x-amz-content-sha256 (hex) that differs from the body                 400 XAmzContentSHA256Mismatch
  x-amz-checksum-sha256 that differs from the body                      400 BadDigest
  SigV4-signed S3 request without x-amz-content-sha256                  400 InvalidRequest

Streamed SigV4 payloads (STREAMING-*, as restic's S3 library sends over http) and
UNSIGNED-PAYLOAD are passed on: moto decodes them. Usage: the moto venv's python3 running this
file, with moto_server's arguments (tests/support/moto.rs).
"""

import base64
import hashlib
import io
import re
import sys

import moto.server

MISSING_LENGTH = (411, "MissingContentLength", "You must provide the Content-Length HTTP header.")


def refuse(environ, start_response, status, code, message):
    # In the server's log, beside Werkzeug's line for the request.
    print(f"strict: {environ.get('REQUEST_METHOD')} {environ.get('PATH_INFO')}: {status} {code}", file=sys.stderr)
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{code}</Code><Message>{message}</Message>"
        "<RequestId>strict-moto</RequestId></Error>"
    ).encode()
    reason = {400: "Bad Request", 411: "Length Required"}[status]
    start_response(
        f"{status} {reason}",
        [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))],
    )
    return [body]


def decoded(body):
    """The payload of an aws-chunked body (`<hex size>[;chunk-signature=...]\\r\\n<data>\\r\\n`
    ... up to a chunk of size 0, then optional trailers); None when it is not one."""
    out, at = bytearray(), 0
    while True:
        end = body.find(b"\r\n", at)
        if end < 0:
            return None
        try:
            size = int(body[at:end].split(b";")[0], 16)
        except ValueError:
            return None
        if size == 0:
            return bytes(out)
        out += body[end + 2 : end + 2 + size]
        at = end + 2 + size + 2


def problem(environ, body):
    """What AWS S3 would refuse in this request: (status, code, message), or None."""
    content_sha = environ.get("HTTP_X_AMZ_CONTENT_SHA256")
    if content_sha is not None and content_sha.startswith("STREAMING-"):
        body = decoded(body)
        if body is None:
            return 400, "IncompleteBody", "The request body is not in the aws-chunked encoding its x-amz-content-sha256 names."
        if environ.get("HTTP_X_AMZ_DECODED_CONTENT_LENGTH", str(len(body))) != str(len(body)):
            return 400, "IncompleteBody", "The decoded body is not x-amz-decoded-content-length bytes long."
    md5 = environ.get("HTTP_CONTENT_MD5")
    if md5 is not None:
        try:
            digest = base64.b64decode(md5, validate=True)
        except ValueError:
            digest = b""
        if len(digest) != 16:
            return 400, "InvalidDigest", "The Content-MD5 you specified was invalid."
        if digest != hashlib.md5(body).digest():
            return 400, "BadDigest", "The Content-MD5 you specified did not match what we received."
    auth = environ.get("HTTP_AUTHORIZATION", "")
    if content_sha is None:
        if auth.startswith("AWS4-HMAC-SHA256") and "/s3/aws4_request" in auth:
            return 400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256"
        return None
    streamed = content_sha.startswith("STREAMING-") or content_sha == "UNSIGNED-PAYLOAD"
    if not streamed:
        if not re.fullmatch(r"[0-9a-f]{64}", content_sha):
            return 400, "InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-* or a SHA-256 in hex"
        if content_sha != hashlib.sha256(body).hexdigest():
            return (
                400,
                "XAmzContentSHA256Mismatch",
                "The provided 'x-amz-content-sha256' header does not match what was computed.",
            )
    checksum = environ.get("HTTP_X_AMZ_CHECKSUM_SHA256")
    if checksum is not None:
        if checksum != base64.b64encode(hashlib.sha256(body).digest()).decode():
            return 400, "BadDigest", "The SHA256 you specified did not match the calculated checksum."
    return None


class Strict:
    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") in ("PUT", "POST"):
            length = environ.get("CONTENT_LENGTH", "")
            chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
            if not length or chunked:
                return refuse(environ, start_response, *MISSING_LENGTH)
        length = environ.get("CONTENT_LENGTH") or "0"
        body = environ["wsgi.input"].read(int(length)) if length.isdigit() else b""
        environ["wsgi.input"] = io.BytesIO(body)
        found = problem(environ, body)
        if found is not None:
            return refuse(environ, start_response, *found)
        return self.app(environ, start_response)


if __name__ == "__main__":
    serve = moto.server.run_simple
    moto.server.run_simple = lambda host, port, app, **kw: serve(host, port, Strict(app), **kw)
    sys.exit(moto.server.main(sys.argv[1:]))
