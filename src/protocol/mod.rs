//! Wire formats: the only place a request body is built or a response parsed.
