export { openPostgres, toStorageError, inTransaction, type OpenPostgres, type PostgresOptions } from './database.js'
export { createPostgresStorage, type PostgresStorage } from './storage.js'
