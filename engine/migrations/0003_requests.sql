-- Schema version 3: each stack's request log, so the node that takes over
-- a stack serves the log its writer kept. Best effort, like the embedded
-- log: a row is written shortly after its request is answered, outside the
-- ledger's fenced batches. Kept per organization by count and by age.

CREATE TABLE sika_requests (
    stack text NOT NULL,
    id text NOT NULL,
    -- The order entries reached the log in (ids are not ordered within a
    -- millisecond): the count kept per organization is the newest by it.
    seq bigserial NOT NULL,
    organization text NOT NULL,
    api_key_id text,
    method text NOT NULL,
    path text NOT NULL,
    status integer NOT NULL,
    duration_us bigint NOT NULL,
    request_body text,
    response_body text,
    -- Milliseconds since the epoch, as the API shows it.
    created_at bigint NOT NULL,
    PRIMARY KEY (stack, id)
);

-- Trimming: an organization's newest entries by count, and everything
-- older than the retention age.
CREATE INDEX sika_requests_by_organization ON sika_requests (stack, organization, seq);
CREATE INDEX sika_requests_by_age ON sika_requests (stack, created_at);
