"""The one error tree of the stack; clients see each class's stable `code`.

    HermesError (500, internal_error)
     ├── BadRequest (400, bad_request)
     │    ├── MalformedJSON (400, malformed_json)
     │    ├── InvalidInput (422, invalid_request)
     │    └── FetchFailed (400, fetch_failed)          services.worker.web: a page web_extract could not read
     │         └── UnsupportedContent (400, unsupported_content)   neither HTML, text nor PDF
     ├── Unauthorized (401, unauthorized)
     ├── Forbidden (403, forbidden)
     │    └── AddressRefused (403, address_refused)   shared.security.addresses: an internal destination
     ├── NotFound (404, not_found)
     ├── Conflict (409, conflict)
     │    ├── IdempotencyConflict (409, idempotency_key_reused)
     │    └── InvalidState (409, invalid_state)
     ├── PayloadTooLarge (413, payload_too_large)
     ├── UnsupportedMediaType (415, unsupported_media_type)   shared.media: a file type refused by its content
     ├── RateLimited (429, rate_limited)
     ├── Unavailable (503, service_unavailable)
     └── ModelError (502, model_error)           raised by shared.llm; a turn fails with its code
          ├── ModelAuthError (model_auth_failed)       401/403 from the provider: a bad key
          ├── ModelRequestError (model_bad_request)    another 4xx: the request was refused
          │    └── ContextOverflow (context_overflow)  the prompt is longer than the model's window
          └── ModelUnavailable (model_unavailable)     retries and fallback ran out
"""

from __future__ import annotations


class HermesError(Exception):
    """Base of every error a client may see."""

    status_code = 500
    code = "internal_error"

    def __init__(self, message: str | None = None, *, code: str | None = None) -> None:
        super().__init__(message or self.__class__.__doc__ or self.code)
        self.message = message or (self.__class__.__doc__ or self.code).strip()
        if code:
            self.code = code


class BadRequest(HermesError):
    """The request could not be understood."""

    status_code = 400
    code = "bad_request"


class MalformedJSON(BadRequest):
    """The request body is not valid JSON."""

    code = "malformed_json"


class InvalidInput(BadRequest):
    """The request body or parameters are invalid."""

    status_code = 422
    code = "invalid_request"


class Unauthorized(HermesError):
    """A valid API key is required."""

    status_code = 401
    code = "unauthorized"


class Forbidden(HermesError):
    """This key may not do that."""

    status_code = 403
    code = "forbidden"


class NotFound(HermesError):
    """No such object."""

    status_code = 404
    code = "not_found"


class Conflict(HermesError):
    """The request conflicts with the current state."""

    status_code = 409
    code = "conflict"


class IdempotencyConflict(Conflict):
    """This Idempotency-Key was already used with a different request body."""

    code = "idempotency_key_reused"


class InvalidState(Conflict):
    """The object is not in a state that allows this."""

    code = "invalid_state"


class PayloadTooLarge(HermesError):
    """The request body is larger than allowed."""

    status_code = 413
    code = "payload_too_large"


class UnsupportedMediaType(HermesError):
    """The file's content is of a type the stack does not accept."""

    status_code = 415
    code = "unsupported_media_type"


class RateLimited(HermesError):
    """Too many requests."""

    status_code = 429
    code = "rate_limited"

    def __init__(self, message: str | None = None, *, code: str | None = None, retry_after: int | None = None) -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after


class Unavailable(HermesError):
    """A backing service is unavailable; try again."""

    status_code = 503
    code = "service_unavailable"


class ModelError(HermesError):
    """The model provider failed."""

    status_code = 502
    code = "model_error"


class ModelAuthError(ModelError):
    """The model provider refused the API key."""

    code = "model_auth_failed"


class ModelRequestError(ModelError):
    """The model provider refused the request."""

    code = "model_bad_request"


class ContextOverflow(ModelRequestError):
    """The prompt is longer than the model's context window; compressing the context can cure it."""

    code = "context_overflow"


class ModelUnavailable(ModelError):
    """The model provider kept failing after retries and fallback."""

    code = "model_unavailable"
