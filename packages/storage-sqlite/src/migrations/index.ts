import type { Migration } from 'kysely/migration'
import { m001Vaults } from './001-vaults.js'
import { m002Oauth } from './002-oauth.js'
import { m003Accounts } from './003-accounts.js'
import { m004AccessLogSubject } from './004-access-log-subject.js'
import { m005CiIdentities } from './005-ci-identities.js'
import { m006History } from './006-history.js'
import { m007VaultAdmin } from './007-vault-admin.js'
import { m008Webhooks } from './008-webhooks.js'
import { m009AccessLogIssue25 } from './009-access-log-issue-25.js'
import { m010ClientRegistrations } from './010-client-registrations.js'
import { m011AccessLogActions } from './011-access-log-actions.js'
import { m012Overrides } from './012-overrides.js'
import { m013PushDeletes } from './013-push-deletes.js'
import { m014ChangeCounter } from './014-change-counter.js'
import { m015StagedUsage } from './015-staged-usage.js'

/**
 * Versioned migrations, listed statically (no folder scanning at run time).
 * Names sort in the order they run. Never edit a landed migration: add one.
 */
export const migrations: Record<string, Migration> = {
  '001_vaults': m001Vaults,
  '002_oauth': m002Oauth,
  '003_accounts': m003Accounts,
  '004_access_log_subject': m004AccessLogSubject,
  '005_ci_identities': m005CiIdentities,
  '006_history': m006History,
  '007_vault_admin': m007VaultAdmin,
  '008_webhooks': m008Webhooks,
  '009_access_log_issue_25': m009AccessLogIssue25,
  '010_client_registrations': m010ClientRegistrations,
  '011_access_log_actions': m011AccessLogActions,
  '012_overrides': m012Overrides,
  '013_push_deletes': m013PushDeletes,
  '014_change_counter': m014ChangeCounter,
  '015_staged_usage': m015StagedUsage,
}
