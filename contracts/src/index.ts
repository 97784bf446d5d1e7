/** The language every part of Baseplane speaks. Pure: no I/O. */
export * from './api';
export * from './auth';
export * from './bounded-map';
export * from './commands';
export * from './config';
export * from './errors';
export * from './events';
export * from './keys';
export * from './platform-token';
export * from './schema';
export * from './secrets';
export * from './transaction';
export * from './validate';
export * from './workflows';
export * from './rows';
export * from './sql';
export * from './storage';
