export { openDatabase, type OpenDatabase, type OpenOptions } from './database.js'
