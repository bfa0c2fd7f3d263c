import { sql, type Kysely } from 'kysely'
import { Migrator, type Migration, type MigrationProvider } from 'kysely/migration'
import { m007ClientRegistrations } from './migration-007-client-registrations.js'
import { m011ChangeCounter } from './migration-011-change-counter.js'
import { m012StagedUsage } from './migration-012-staged-usage.js'

/**
 * The schema, as versioned migrations (kysely's Migrator, table `envkeep_storage_migration`).
 * Same tables and names as the SQLite backend, in PostgreSQL's types: times are bigint
 * milliseconds since the epoch (UTC), values bytea, lists of names jsonb arrays. Constraints
 * are named so a violation's message names the rule, never the row. Migrations never
 * import app code: the vocabularies are repeated here.
 */
const m001: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table vaults (
        id text primary key,
        name text not null constraint vaults_name check (length(name) > 0),
        plan text not null,
        require_second_person boolean not null default false,
        wrapped_key bytea,
        created_at bigint not null
      );
      create index vaults_by_name on vaults (name);

      create table members (
        vault_id text not null references vaults (id) on delete cascade,
        person_id text not null,
        role text not null constraint members_role check (role in ('owner', 'editor', 'viewer')),
        constraint members_pk primary key (vault_id, person_id)
      );
      create index members_by_person on members (person_id, vault_id);

      create table environments (
        vault_id text not null references vaults (id) on delete cascade,
        name text not null constraint environments_name check (length(name) between 1 and 63),
        owners_only boolean not null default false,
        version bigint not null default 0 constraint environments_version check (version >= 0),
        created_at bigint not null,
        constraint environments_pk primary key (vault_id, name)
      );

      create table variables (
        vault_id text not null,
        environment text not null,
        name text not null constraint variables_name check (length(name) between 1 and 256),
        sealed bytea not null constraint variables_sealed check (length(sealed) > 0),
        updated_at bigint not null,
        updated_by text,
        constraint variables_pk primary key (vault_id, environment, name),
        constraint variables_environment foreign key (vault_id, environment) references environments (vault_id, name) on delete cascade
      );

      create table imports (
        id text primary key,
        vault_id text not null,
        environment text not null,
        sender_id text not null,
        sign_in_id text,
        status text not null constraint imports_status check (status in ('pending', 'applied', 'rejected', 'expired')),
        names jsonb not null,
        overwrites jsonb not null,
        refused jsonb not null,
        created_at bigint not null,
        expires_at bigint not null,
        decided_at bigint,
        decided_by text,
        constraint imports_decided check ((status = 'pending') = (decided_at is null)),
        constraint imports_environment foreign key (vault_id, environment) references environments (vault_id, name) on delete cascade
      );
      create index imports_by_vault on imports (vault_id, status, created_at);
      create index imports_by_expiry on imports (status, expires_at);

      create table import_values (
        import_id text not null references imports (id) on delete cascade,
        name text not null,
        sealed bytea not null constraint import_values_sealed check (length(sealed) > 0),
        constraint import_values_pk primary key (import_id, name)
      );

      create table access_log (
        id bigint generated always as identity primary key,
        vault_id text not null references vaults (id) on delete cascade,
        at bigint not null,
        person_id text,
        sign_in_id text,
        client_id text,
        action text not null constraint access_log_action check (action in ('read', 'refused', 'push_created', 'push_applied', 'push_rejected', 'push_expired', 'variable_set', 'variable_deleted', 'member_added', 'member_changed', 'member_removed', 'environment_created', 'vault_created')),
        environment text,
        names jsonb not null default '[]' constraint access_log_names check (jsonb_typeof(names) = 'array'),
        address text,
        subject text,
        detail text
      );
      create index access_log_by_vault on access_log (vault_id, id);

      create table oauth_codes (
        code_hash text primary key,
        client_id text not null,
        redirect_uri text not null,
        code_challenge text not null,
        resource text not null,
        scopes jsonb not null,
        person_id text not null,
        created_at bigint not null,
        expires_at bigint not null,
        consumed_at bigint
      );

      create table sign_ins (
        id text primary key,
        person_id text not null,
        client_id text not null,
        resource text not null,
        scopes jsonb not null,
        code_hash text,
        created_at bigint not null,
        expires_at bigint not null,
        last_used_at bigint,
        revoked_at bigint,
        label text
      );
      create index sign_ins_by_person on sign_ins (person_id, created_at);
      create index sign_ins_by_code on sign_ins (code_hash);

      create table access_tokens (
        token_hash text primary key,
        sign_in_id text not null references sign_ins (id) on delete cascade,
        expires_at bigint not null
      );
      create index access_tokens_by_sign_in on access_tokens (sign_in_id);

      create table refresh_tokens (
        token_hash text primary key,
        sign_in_id text not null references sign_ins (id) on delete cascade,
        used_at bigint
      );
      create index refresh_tokens_by_sign_in on refresh_tokens (sign_in_id);

      create table ci_identities (
        id text primary key,
        vault_id text not null references vaults (id) on delete cascade,
        name text not null,
        issuer text not null,
        audience text not null,
        subject_pattern text not null,
        required_claims jsonb not null,
        role text not null constraint ci_identities_role check (role in ('editor', 'owner')),
        environments jsonb,
        created_at bigint not null
      );
      create unique index ci_identities_name on ci_identities (vault_id, lower(name));
      create index ci_identities_by_issuer on ci_identities (issuer);

      create table used_subject_tokens (
        key text primary key,
        expires_at bigint not null
      );
    `.execute(db)
  },
}

/** Per-sign-in request counters shared by every server process (fixed windows). */
const m002: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table rate_counters (
        key text not null,
        window_ms bigint not null,
        window_start bigint not null,
        count bigint not null,
        constraint rate_counters_pk primary key (key, window_ms)
      );
      create index rate_counters_by_end on rate_counters ((window_start + window_ms));
    `.execute(db)
  },
}

/**
 * History (issue 12): change sets and their entries, each side sealed for its own row by the
 * domain; and the access log's three new actions.
 */
const m003: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table change_sets (
        seq bigint generated always as identity primary key,
        id text not null constraint change_sets_id unique,
        vault_id text not null,
        environment text not null,
        at bigint not null,
        by text,
        how text not null constraint change_sets_how check (how in ('push', 'page', 'admin', 'revert', 'restore')),
        ref text,
        constraint change_sets_environment foreign key (vault_id, environment) references environments (vault_id, name) on delete cascade
      );
      create index change_sets_by_environment on change_sets (vault_id, environment, seq);
      create index change_sets_by_ref on change_sets (vault_id, ref) where ref is not null;

      create table change_entries (
        change_set_seq bigint not null references change_sets (seq) on delete cascade,
        name text not null,
        kind text not null constraint change_entries_kind check (kind in ('added', 'changed', 'deleted')),
        before bytea,
        after bytea,
        constraint change_entries_pk primary key (change_set_seq, name),
        constraint change_entries_before check ((kind = 'added') = (before is null)),
        constraint change_entries_after check ((kind = 'deleted') = (after is null))
      );
      create index change_entries_by_name on change_entries (name, change_set_seq);

      alter table access_log drop constraint access_log_action;
      alter table access_log add constraint access_log_action check (action in ('read', 'refused', 'push_created', 'push_applied', 'push_rejected', 'push_expired', 'variable_set', 'variable_deleted', 'member_added', 'member_changed', 'member_removed', 'environment_created', 'vault_created', 'history_revealed', 'change_reverted', 'environment_restored'));
    `.execute(db)
  },
}

/**
 * The web app a team lives in (issue 14): "Require a second person" per environment (on for
 * owners-only ones), a reason on rejected pushes, the server-level audit log, and the access
 * log's actions vault_renamed and environment_changed.
 */
const m004: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      alter table environments add column second_person boolean not null default false;
      update environments set second_person = owners_only;
      alter table imports add column reason text;
      create table audit_log (
        id bigint generated always as identity primary key,
        at bigint not null,
        person_id text,
        action text not null constraint audit_log_action check (action in ('vault_deleted')),
        vault_id text not null,
        vault_name text not null
      );
      alter table access_log drop constraint access_log_action;
      alter table access_log add constraint access_log_action check (action in ('read', 'refused', 'push_created', 'push_applied', 'push_rejected', 'push_expired', 'variable_set', 'variable_deleted', 'member_added', 'member_changed', 'member_removed', 'environment_created', 'vault_created', 'history_revealed', 'change_reverted', 'environment_restored', 'vault_renamed', 'environment_changed'));
    `.execute(db)
  },
}

/**
 * Webhooks (issue 14, item 5): a vault's webhooks, each signing secret sealed by the domain
 * (never stored plain), and the outbox of their deliveries, one per (webhook, push, event),
 * claimed by one process at a time (claim_token, claimed_until). Deleting a vault deletes its
 * webhooks, and a webhook its deliveries. (004 is another change's.)
 */
const m005: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table webhooks (
        id text primary key,
        vault_id text not null references vaults (id) on delete cascade,
        url text not null,
        format text not null constraint webhooks_format check (format in ('generic', 'slack')),
        events jsonb not null constraint webhooks_events check (jsonb_typeof(events) = 'array'),
        sealed_secret bytea,
        created_at bigint not null,
        created_by text
      );
      create index webhooks_by_vault on webhooks (vault_id, created_at);

      create table webhook_deliveries (
        id bigint generated always as identity primary key,
        webhook_id text not null references webhooks (id) on delete cascade,
        push_id text not null references imports (id) on delete cascade,
        event text not null constraint webhook_deliveries_event check (event in ('push.created', 'push.decided', 'push.expired')),
        occurred_at bigint not null,
        status text not null default 'pending' constraint webhook_deliveries_status check (status in ('pending', 'delivered', 'failed')),
        attempts integer not null default 0,
        next_attempt_at bigint,
        last_attempt_at bigint,
        last_status integer,
        last_error text,
        claim_token text,
        claimed_until bigint,
        constraint webhook_deliveries_once unique (webhook_id, push_id, event)
      );
      create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';
      create index webhook_deliveries_by_webhook on webhook_deliveries (webhook_id, occurred_at);
      create index webhook_deliveries_push on webhook_deliveries (push_id);
    `.execute(db)
  },
}

/**
 * Issue 25: the access log's actions invitation_sent, invitation_revoked, webhook_added and
 * webhook_removed. Webhook URLs need no column: the domain seals each URL with the webhook's
 * secret in `sealed_secret`, keeps only a masked form in `url`, and seals the rows written
 * before on the server's first start with this version (it needs the master key).
 */
const m006: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      alter table access_log drop constraint access_log_action;
      alter table access_log add constraint access_log_action check (action in ('read', 'refused', 'push_created', 'push_applied', 'push_rejected', 'push_expired', 'variable_set', 'variable_deleted', 'member_added', 'member_changed', 'member_removed', 'environment_created', 'vault_created', 'history_revealed', 'change_reverted', 'environment_restored', 'vault_renamed', 'environment_changed', 'invitation_sent', 'invitation_revoked', 'webhook_added', 'webhook_removed'));
    `.execute(db)
  },
}

/**
 * The access log's action becomes plain text (issue 19): the list of actions is one domain
 * constant (`ACCESS_ACTIONS` in @envkeep/env-api-plugin), so no CHECK repeats it and a new
 * action needs no migration.
 */
const m008: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`alter table access_log drop constraint access_log_action`.execute(db)
  },
}

/**
 * Personal overrides (issue 24): the environments whose owners allow them, and each person's
 * sealed value of a name there. Both go with their environment; turning the switch off
 * deletes the rows (cascade).
 */
const m009: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`
      create table override_environments (
        vault_id text not null,
        environment text not null,
        constraint override_environments_pk primary key (vault_id, environment),
        constraint override_environments_environment foreign key (vault_id, environment) references environments (vault_id, name) on delete cascade
      );
      create table overrides (
        vault_id text not null,
        environment text not null,
        name text not null,
        person_id text not null,
        sealed bytea not null constraint overrides_sealed check (length(sealed) > 0),
        updated_at bigint not null,
        constraint overrides_pk primary key (vault_id, environment, name, person_id),
        constraint overrides_allowed foreign key (vault_id, environment) references override_environments (vault_id, environment) on delete cascade
      );
    `.execute(db)
  },
}

/** Pushes that delete names (issue 25: a deletion proposed from the pages); none for older pushes. */
const m010: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`alter table imports add column deletes jsonb not null default '[]'::jsonb`.execute(db)
  },
}

const MIGRATIONS: Record<string, Migration> = {
  '001_schema': m001,
  '002_rate_counters': m002,
  '003_history': m003,
  '004_vault_admin': m004,
  '005_webhooks': m005,
  '006_access_log_issue_25': m006,
  '007_client_registrations': m007ClientRegistrations,
  '008_access_log_actions': m008,
  '009_overrides': m009,
  '010_push_deletes': m010,
  '011_change_counter': m011ChangeCounter,
  '012_staged_usage': m012StagedUsage,
}

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS }

/** Brings the schema to the newest version; safe to run on every start and from several processes at once. */
export async function migrateToLatest(db: Kysely<unknown>, schema?: string): Promise<void> {
  const migrator = new Migrator({
    db,
    provider,
    migrationTableName: 'envkeep_storage_migration',
    migrationLockTableName: 'envkeep_storage_migration_lock',
    // named, so another schema's migration table in the same database is never taken for ours
    ...(schema ? { migrationTableSchema: schema } : {}),
  })
  const { error } = await migrator.migrateToLatest()
  if (error) throw error
}
