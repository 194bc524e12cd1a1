-- The gateway's request id beside each usage event, so that a request's response header (x-request-id) finds
-- its row. The event id stays the dedup key: since gateways stamp their own (evt_...), a request id no longer
-- appears in it.
ALTER TABLE usage_events ADD COLUMN IF NOT EXISTS request_id String DEFAULT '' AFTER event_id;
