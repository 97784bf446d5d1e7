/**
 * Quoting for SQL written as text (DDL cannot take parameters, and names are
 * never parameters): a name as a quoted identifier, a value as a standard
 * string literal. Every service quotes with these two.
 */

/** `name` as a quoted identifier: `"` doubled inside. */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** `value` as a standard-conforming string literal: `'` doubled inside. */
export const literal = (value: string) => `'${value.replace(/'/g, "''")}'`;
