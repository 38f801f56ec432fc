/**
 * SQL for the keys of a batch passed as one JSON array parameter, to put beside the join that
 * matches the batch to a table by its key: `AND t.id = ANY (${batchKeys('$1', 'id')})`.
 *
 * Why: the planner takes `jsonb_to_recordset` for 100 rows whatever the batch holds, so against a
 * table of up to a few thousand or some tens of thousands of rows (the narrower the rows, the more)
 * it finds a hash join over a sequential scan cheaper than looking 100 keys up — every batched
 * statement reads the whole table (a batch of 24 against 28,000 small rows: 3.8 ms of Postgres CPU
 * instead of 0.7). An array it cannot see into it takes for 10 keys, and looks them up in the key's
 * index at any table size.
 */
export function batchKeys(param: string, field: string): string {
  // Both are constants of the statement's text, never input: refuse anything but a placeholder and a name.
  if (!/^\$[1-9][0-9]*$/.test(param)) throw new Error(`batchKeys: ${param} is not a parameter placeholder`);
  if (!/^[a-z_][a-z0-9_]*$/.test(field)) throw new Error(`batchKeys: ${field} is not a field name`);
  return `ARRAY(SELECT jsonb_array_elements(${param}::jsonb) ->> '${field}')`;
}
