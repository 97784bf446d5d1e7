/**
 * Addresses every API must refuse with 400 `invalid_email`: an address-list
 * parser (nodemailer's) reads each as another mailbox, or several, than the
 * whole string an account would keep as its verified email (the 24 November
 * auth audit's).
 */
export const MISLEADING_ADDRESSES = ['atk@example.com(example.org)', '<atk@example.com>example.org', '(x)@example.com', 'a,b@example.com'] as const;
