/**
 * Kysely table types. Each store adds its tables here (one interface per
 * table, grouped by migration), then lists them in DB.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface DB {}
