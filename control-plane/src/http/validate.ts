/** Request validation lives in contracts so both planes answer a bad body alike. */
export { validate } from '@baseplane/contracts';
