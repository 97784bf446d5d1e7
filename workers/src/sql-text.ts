/**
 * Quoting for the SQL the workers write as text (DDL cannot take parameters):
 * a name as a quoted identifier, a value as a standard string literal.
 */

/** `name` as a quoted identifier: `"` doubled inside. */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** `value` as a standard-conforming string literal: `'` doubled inside. */
export const literal = (value: string) => `'${value.replace(/'/g, "''")}'`;
