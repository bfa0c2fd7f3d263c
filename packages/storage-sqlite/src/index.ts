export { openDatabase, type OpenDatabase, type OpenOptions } from './database.js'
export { createSqliteStorage, type SqliteStorage } from './storage.js'
