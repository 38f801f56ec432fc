// Imports nothing from this package: the envelope and delegation contracts both carry these JSON
// shapes, and keeping them here spares either one importing the other for them.

/** A JSON object as the contracts carry it: an A2A message, part or artifact, an agent card. */
export type JsonObject = { [key: string]: unknown };

/** Any JSON value but null: what an A2A data part may hold (google.protobuf.Value, null aside). */
export type JsonValue = string | number | boolean | JsonObject | unknown[];

/** A JSON object: not null, not an array. */
export const isJsonObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
