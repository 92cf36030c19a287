"""Hand-written paraphrase and near-miss pairs of developer notes, for the semantic merge decision.

Each pair is two notes a developer might have written in different sessions. A `paraphrase`
states the same fact in other words (reordered, other verbs, another sentence shape), and
should merge. The others must not: a `near miss` shares most words but differs in a number,
a negation, a named technology, an identifier, a version, a date or a direction; a `same topic`
pair is about the same thing but states another fact. Every pair carries a `type` (the memory
type it would be stored as: embeddings are compared with it in their prefix, as the store does).
"""

from __future__ import annotations

from dataclasses import dataclass

WEBHOOK = "We never retry payment webhooks ourselves, since the provider already retries them for 72 hours"
WEBHOOK_72H = "The payment provider retries webhooks for 72 hours, so our side never retries them"
WEBHOOK_3D = "The payment provider retries webhooks for three days, so our side never retries them"


@dataclass(frozen=True, slots=True)
class Labelled:
    a: str
    b: str
    merge: bool
    kind: str  # paraphrase, or what differs: number, negation, technology, identifier, ... same topic
    type: str = "decision"


def _p(a: str, b: str, type_: str = "decision") -> Labelled:
    return Labelled(a, b, True, "paraphrase", type_)


def _n(kind: str, a: str, b: str, type_: str = "decision") -> Labelled:
    return Labelled(a, b, False, kind, type_)


PARAPHRASES = (
    _p(WEBHOOK, WEBHOOK_72H),
    _p(WEBHOOK, WEBHOOK_3D),
    _p(WEBHOOK_72H, WEBHOOK_3D),
    _p(
        "The CI pipeline caches node_modules keyed on the hash of pnpm-lock.yaml",
        "node_modules is cached in CI, and the cache key is the pnpm-lock.yaml hash",
        "pattern",
    ),
    _p(
        "The staging database is refreshed from a production snapshot every Sunday night",
        "Every Sunday night a production snapshot is restored into the staging database",
        "context",
    ),
    _p(
        "Timestamps are stored in UTC and converted to local time only in the UI",
        "We keep every timestamp in UTC and only the UI converts it to the user's local time",
        "architecture",
    ),
    _p(
        "Feature flags are managed in LaunchDarkly, so do not hard-code them in settings files",
        "Don't hard-code feature flags in settings files; LaunchDarkly manages them",
    ),
    _p(
        "test_checkout_total is flaky when the suite runs in parallel because it shares a fixture database",
        "Running the suite in parallel makes test_checkout_total flaky: it shares a fixture database",
        "gotcha",
    ),
    _p(
        "The mobile app talks to the backend only through the GraphQL gateway",
        "All backend calls from the mobile app go through the GraphQL gateway",
        "architecture",
    ),
    _p(
        "We squash-merge pull requests so main has one commit per change",
        "Pull requests get squash-merged, keeping a single commit per change on main",
        "pattern",
    ),
    _p(
        "The nightly export job writes its files to the reports bucket in S3",
        "Every night the export job puts its output files into the S3 reports bucket",
        "context",
    ),
    _p(
        "Prefer composition over inheritance for the payment adapters",
        "For the payment adapters we favour composition rather than inheritance",
        "preference",
    ),
    _p(
        "The search index is rebuilt from scratch whenever the schema of the products table changes",
        "Whenever the products table schema changes, we rebuild the search index from scratch",
    ),
    _p(
        "Password reset links are valid for 30 minutes",
        "A password reset link stops working 30 minutes after it is sent",
        "context",
    ),
    _p(
        "Use the make dev target to start the whole local stack",
        "The whole local stack starts with the make dev target",
        "pattern",
    ),
    _p(
        "Invoices are generated on the first day of each month by a cron job",
        "A cron job generates the invoices on the first day of every month",
        "context",
    ),
    _p(
        "The user_events table is partitioned by month to keep the indexes small",
        "To keep indexes small, user_events is partitioned per month",
        "architecture",
    ),
    _p(
        "We chose Postgres over MongoDB because reporting needs joins across orders and customers",
        "Reporting needs joins across customers and orders, which is why we picked Postgres over MongoDB",
    ),
    _p(
        "The frontend talks to the API through a generated TypeScript client, never hand-written fetch calls",
        "Never hand-write fetch calls in the frontend: use the generated TypeScript client for the API",
        "pattern",
    ),
    _p(
        "Every database migration must be reversible and ship with a down step",
        "Migrations have to be reversible: each one ships with a down step",
        "pattern",
    ),
    _p(
        "The image resizer runs as a separate worker so uploads return quickly",
        "Uploads return quickly because image resizing happens in a separate worker",
        "architecture",
    ),
    _p(
        "Secrets come from Vault at runtime and are never committed to the repository",
        "We never commit secrets to the repository; the services read them from Vault at runtime",
    ),
    _p(
        "The product catalogue is cached for 10 minutes in Redis",
        "Redis keeps the product catalogue in its cache for 10 minutes",
        "context",
    ),
    _p(
        "Log lines are structured JSON so that Loki can index their fields",
        "We write structured JSON log lines so their fields can be indexed by Loki",
        "pattern",
    ),
    _p(
        "The legacy SOAP endpoint must stay up until the last partner migrates off it",
        "Keep the legacy SOAP endpoint running until the last partner has migrated off it",
    ),
    _p(
        "Code review needs two approvals before anything touching billing is merged",
        "Anything that touches billing is merged only after two approvals in code review",
        "pattern",
    ),
    _p(
        "The docs site is built with mkdocs and deployed to GitHub Pages on every tag",
        "On every tag we build the docs site with mkdocs and publish it to GitHub Pages",
        "context",
    ),
    _p(
        "Always run ruff and mypy locally before pushing",
        "Before pushing, run ruff and mypy locally every time",
        "preference",
    ),
    _p(
        "The recommendation model is retrained weekly on the previous week's clicks",
        "Each week the recommendation model gets retrained using the clicks from the week before",
        "context",
    ),
    _p(
        "Accessing request.user inside a background task raises, because the request is gone by then",
        "Inside a background task request.user raises: the request no longer exists at that point",
        "gotcha",
    ),
    _p(
        "The Android build breaks if the Gradle daemon runs out of memory, so give it 4 GB",
        "Give the Gradle daemon 4 GB, otherwise the Android build breaks when it runs out of memory",
        "gotcha",
    ),
    _p(
        "All money amounts are integers in cents, never floats",
        "Money amounts are stored as integer cents and never as floats",
        "pattern",
    ),
    _p(
        "The websocket server sends a heartbeat every 25 seconds so proxies do not close idle connections",
        "To stop proxies closing idle connections, the websocket server sends a heartbeat every 25 seconds",
        "architecture",
    ),
    _p(
        "New endpoints need an OpenAPI description before they are reviewed",
        "Before review, every new endpoint needs its OpenAPI description",
        "pattern",
    ),
    _p(
        "Customer data must stay in the EU region for GDPR reasons",
        "For GDPR reasons customer data has to stay within the EU region",
    ),
    _p(
        "The search box debounces input by 300 ms before querying the API",
        "Input in the search box is debounced 300 ms before the API is queried",
        "context",
    ),
    _p(
        "Dependabot pull requests are merged automatically when CI is green",
        "When CI is green, Dependabot pull requests get merged automatically",
        "pattern",
    ),
    _p(
        "We use trunk-based development with short-lived feature branches",
        "Development is trunk-based: feature branches are short-lived",
        "preference",
    ),
    _p(
        "The checkout page loads the Stripe script lazily to keep the first paint fast",
        "To keep first paint fast, the Stripe script is lazy-loaded on the checkout page",
        "architecture",
    ),
    _p(
        "Integration tests spin up a throwaway Postgres container per test session",
        "Each test session of the integration tests starts its own throwaway Postgres container",
        "pattern",
    ),
    _p(
        "The monorepo uses Nx to build only the projects affected by a change",
        "Nx builds only the projects a change affects in the monorepo",
        "architecture",
    ),
    _p(
        "Emails are sent through a queue so a slow SMTP server never blocks a request",
        "A slow SMTP server never blocks a request because emails go out through a queue",
        "architecture",
    ),
    _p(
        "Large uploads go straight to S3 with presigned URLs instead of through our servers",
        "Our servers do not proxy large uploads: clients send them directly to S3 using presigned URLs",
        "architecture",
    ),
    _p(
        "The team prefers small pull requests of under 400 lines",
        "Pull requests should be small, under 400 lines, as the team prefers",
        "preference",
    ),
    _p(
        "Calling the geocoding API costs money per request, so results are cached for 30 days",
        "Geocoding API results are cached for 30 days because each request costs money",
        "gotcha",
    ),
    _p(
        "The admin panel is only reachable over the VPN",
        "You can only reach the admin panel through the VPN",
        "context",
    ),
    _p(
        "Translations live in locales/ as one JSON file per language",
        "Each language has its own JSON file of translations under locales/",
        "pattern",
    ),
    _p(
        "The order service publishes an OrderPlaced event after the transaction commits",
        "After its transaction commits, the order service publishes OrderPlaced",
        "architecture",
    ),
    _p(
        "Use the shared retry helper for outbound HTTP calls instead of writing loops by hand",
        "Outbound HTTP calls should go through the shared retry helper rather than hand-written loops",
        "pattern",
    ),
    _p(
        "Load tests showed the API tops out at about 1200 requests per second on one node",
        "One API node handles roughly 1200 requests per second before it saturates, per the load tests",
        "context",
    ),
    _p(
        "The release branch is cut every second Wednesday",
        "Every second Wednesday we cut the release branch",
        "context",
    ),
    _p(
        "Deleting a workspace is a soft delete; the rows are purged after 14 days",
        "Workspaces are soft-deleted first and their rows are purged 14 days later",
        "architecture",
    ),
    _p(
        "Kafka consumers commit offsets only after the message is processed",
        "Offsets are committed by the Kafka consumers only once a message has been processed",
        "pattern",
    ),
    _p(
        "The macOS runners in CI are slow, so iOS tests run only on the main branch",
        "iOS tests run only on main because the macOS CI runners are slow",
        "gotcha",
    ),
    _p(
        "Dates shown to users are formatted with the user's locale, not the server's",
        "Format user-facing dates with the user's locale rather than the server's",
        "pattern",
    ),
    _p(
        "We store uploaded avatars at 256 pixels square and discard the original",
        "Uploaded avatars are kept as 256 pixel squares; the originals are discarded",
        "context",
    ),
    _p(
        "The billing service owns the invoices table; other services read it through the billing API",
        "Other services read invoices through the billing API, since the billing service owns that table",
        "architecture",
    ),
    _p(
        "Run the data backfill script in batches of 5000 rows to avoid locking the table",
        "To avoid locking the table, the data backfill script has to run in batches of 5000 rows",
        "gotcha",
    ),
    _p(
        "Sentry alerts for the payments service go to the on-call channel",
        "The on-call channel receives the Sentry alerts of the payments service",
        "context",
    ),
    _p(
        "The team agreed to use Conventional Commits for all commit messages",
        "All commit messages follow Conventional Commits, as the team agreed",
        "preference",
    ),
)

NEAR_MISSES = (
    _n(
        "number",
        WEBHOOK_72H,
        "The payment provider retries webhooks for 24 hours, so our side never retries them",
    ),
    _n(
        "number",
        WEBHOOK_3D,
        "The payment provider retries webhooks for two days, so our side never retries them",
    ),
    _n(
        "negation",
        WEBHOOK,
        "We always retry payment webhooks ourselves, since the provider does not retry them",
    ),
    _n(
        "number",
        "Password reset links are valid for 30 minutes",
        "Password reset links are valid for 30 days",
        "context",
    ),
    _n(
        "number",
        "The product catalogue is cached for 10 minutes in Redis",
        "The product catalogue is cached for 15 minutes in Redis",
        "context",
    ),
    _n(
        "technology",
        "The product catalogue is cached for 10 minutes in Redis",
        "The product catalogue is cached for 10 minutes in Memcached",
        "context",
    ),
    _n(
        "technology",
        "Use pnpm to install the frontend dependencies",
        "Use yarn to install the frontend dependencies",
    ),
    _n(
        "number",
        "The API rate limit is 100 requests per minute per token",
        "The API rate limit is 1000 requests per minute per token",
        "context",
    ),
    _n(
        "version",
        "We pin Django to 4.2 until the upgrade is tested",
        "We pin Django to 5.0 until the upgrade is tested",
    ),
    _n(
        "technology",
        "Background jobs run on Celery with Redis as the broker",
        "Background jobs run on Celery with RabbitMQ as the broker",
        "architecture",
    ),
    _n(
        "negation",
        "Logs are shipped to Datadog from every pod",
        "Logs are not shipped to Datadog from every pod",
        "context",
    ),
    _n(
        "direction",
        "The importer reads CSV files from the uploads bucket",
        "The exporter writes CSV files to the uploads bucket",
        "architecture",
    ),
    _n(
        "identifier",
        "The worker loads its config from app/settings.py at startup",
        "The worker loads its config from app/config.py at startup",
        "architecture",
    ),
    _n(
        "identifier",
        "The service reads REDIS_URL from the environment",
        "The service reads VALKEY_URL from the environment",
        "context",
    ),
    _n(
        "date",
        "The release branch is cut every second Wednesday",
        "The release branch is cut every second Thursday",
        "context",
    ),
    _n(
        "number",
        "Code review needs two approvals before anything touching billing is merged",
        "Code review needs one approval before anything touching billing is merged",
        "pattern",
    ),
    _n(
        "negation",
        "Dependabot pull requests are merged automatically when CI is green",
        "Dependabot pull requests are never merged automatically, even when CI is green",
        "pattern",
    ),
    _n(
        "number",
        "The websocket server sends a heartbeat every 25 seconds",
        "The websocket server sends a heartbeat every 55 seconds",
        "architecture",
    ),
    _n(
        "technology",
        "Integration tests spin up a throwaway Postgres container per test session",
        "Integration tests spin up a throwaway MySQL container per test session",
        "pattern",
    ),
    _n(
        "negation",
        "Secrets are read from Vault at runtime",
        "Secrets are not read from Vault at runtime",
    ),
    _n(
        "technology",
        "The docs site is built with mkdocs and deployed to GitHub Pages",
        "The docs site is built with Sphinx and deployed to GitHub Pages",
        "context",
    ),
    _n(
        "number",
        "Run the data backfill script in batches of 5000 rows to avoid locking the table",
        "Run the data backfill script in batches of 500 rows to avoid locking the table",
        "gotcha",
    ),
    _n(
        "date",
        "Invoices are generated on the first day of each month",
        "Invoices are generated on the last day of each month",
        "context",
    ),
    _n(
        "negation",
        "Kafka consumers commit offsets only after the message is processed",
        "Kafka consumers commit offsets before the message is processed",
        "pattern",
    ),
    _n(
        "direction",
        "Run database migrations before deploying the API",
        "Run database migrations after deploying the API",
        "pattern",
    ),
    _n(
        "version",
        "The build needs Node 18; Node 20 breaks the canvas package",
        "The build needs Node 20; Node 18 breaks the canvas package",
        "gotcha",
    ),
    _n(
        "technology",
        "The monorepo uses Nx to build only the affected projects",
        "The monorepo uses Turborepo to build only the affected projects",
        "architecture",
    ),
    _n(
        "number",
        "The team prefers pull requests of under 400 lines",
        "The team prefers pull requests of under 200 lines",
        "preference",
    ),
    _n(
        "negation",
        "The admin panel is reachable only over the VPN",
        "The admin panel is reachable without the VPN",
        "context",
    ),
    _n(
        "identifier",
        "test_checkout_total is flaky when the suite runs in parallel",
        "test_checkout_discount is flaky when the suite runs in parallel",
        "gotcha",
    ),
    _n(
        "number",
        "Deleted workspaces are purged after 14 days",
        "Deleted workspaces are purged after 40 days",
        "architecture",
    ),
    _n(
        "direction",
        "Dates shown to users are formatted with the user's locale, not the server's",
        "Dates shown to users are formatted with the server's locale, not the user's",
        "pattern",
    ),
    _n(
        "number",
        "Uploaded avatars are stored at 256 pixels square",
        "Uploaded avatars are stored at 512 pixels square",
        "context",
    ),
    _n(
        "technology",
        "Log lines are structured JSON so that Loki can index their fields",
        "Log lines are structured JSON so that Elasticsearch can index their fields",
        "pattern",
    ),
    _n(
        "negation",
        "Always run the linters locally before pushing",
        "Never run the linters locally before pushing, CI does it",
        "preference",
    ),
    _n(
        "date",
        "The staging database is refreshed from a production snapshot every Sunday night",
        "The staging database is refreshed from a production snapshot every Friday night",
        "context",
    ),
    _n(
        "version",
        "Pin the Python base image to 3.11 for the worker",
        "Pin the Python base image to 3.12 for the worker",
        "pattern",
    ),
    _n(
        "identifier",
        "The order service publishes an OrderPlaced event after the transaction commits",
        "The order service publishes an OrderShipped event after the transaction commits",
        "architecture",
    ),
    _n(
        "number",
        "The search box debounces input by 300 ms before querying the API",
        "The search box debounces input by 800 ms before querying the API",
        "context",
    ),
    _n(
        "negation",
        "Money amounts are stored as integer cents",
        "Money amounts are not stored as integer cents",
        "pattern",
    ),
    _n(
        "technology",
        "Emails are sent through SendGrid from a background queue",
        "Emails are sent through Mailgun from a background queue",
        "architecture",
    ),
    _n(
        "direction",
        "Large uploads go straight to S3 with presigned URLs instead of through our servers",
        "Large uploads go through our servers to S3 instead of using presigned URLs",
        "architecture",
    ),
    _n(
        "number",
        "Give the Gradle daemon 4 GB, otherwise the Android build runs out of memory",
        "Give the Gradle daemon 8 GB, otherwise the Android build runs out of memory",
        "gotcha",
    ),
    _n(
        "date",
        "The API v1 endpoints are switched off on 2026-03-31",
        "The API v1 endpoints are switched off on 2026-06-30",
        "context",
    ),
    _n(
        "negation",
        "Customer data may leave the EU region for analytics",
        "Customer data may never leave the EU region, not even for analytics",
    ),
    _n(
        "identifier",
        "Set CACHE_TTL in deploy/values.yaml to change the cache lifetime",
        "Set CACHE_TTL in deploy/secrets.yaml to change the cache lifetime",
        "pattern",
    ),
    _n(
        "technology",
        "Front-end unit tests run with Jest in CI",
        "Front-end unit tests run with Vitest in CI",
        "pattern",
    ),
    _n(
        "number",
        "Geocoding results are cached for 30 days because each request costs money",
        "Geocoding results are cached for 3 days because each request costs money",
        "gotcha",
    ),
    _n(
        "direction",
        "The billing service owns the invoices table and the others read it through its API",
        "The reporting service owns the invoices table and billing reads it through its API",
        "architecture",
    ),
    _n(
        "number",
        "Load tests showed one API node tops out at about 1200 requests per second",
        "Load tests showed one API node tops out at about 400 requests per second",
        "context",
    ),
)

SAME_TOPIC = (
    _n(
        "same topic",
        "The auth service validates JWTs with the public key from the JWKS endpoint",
        "The auth service signs JWTs with the private key stored in Vault",
        "architecture",
    ),
    _n(
        "same topic",
        "The staging database is refreshed from a production snapshot every Sunday night",
        "The staging database is reachable only from the office network",
        "context",
    ),
    _n(
        "same topic",
        "Password reset links are valid for 30 minutes",
        "Password reset emails are sent from the no-reply address",
        "context",
    ),
    _n(
        "same topic",
        "The CI pipeline caches node_modules keyed on the hash of pnpm-lock.yaml",
        "The CI pipeline fails fast when the lint step reports any error",
        "pattern",
    ),
    _n(
        "same topic",
        "Kafka consumers commit offsets only after the message is processed",
        "Kafka topics keep messages for seven days before they are deleted",
        "pattern",
    ),
    _n(
        "same topic",
        "The search index is rebuilt from scratch whenever the products table schema changes",
        "The search index is updated incrementally when a product's price changes",
    ),
    _n(
        "same topic",
        "Feature flags are managed in LaunchDarkly",
        "Feature flags are removed from the code two weeks after a full rollout",
    ),
    _n(
        "same topic",
        "The mobile app talks to the backend only through the GraphQL gateway",
        "The mobile app caches the GraphQL responses for offline use",
        "architecture",
    ),
    _n(
        "same topic",
        "The image resizer runs as a separate worker so uploads return quickly",
        "The image resizer strips EXIF metadata from every uploaded photo",
        "architecture",
    ),
    _n(
        "same topic",
        "The order service publishes an OrderPlaced event after the transaction commits",
        "The order service retries a failed payment capture three times",
        "architecture",
    ),
    _n(
        "same topic",
        "Sentry alerts for the payments service go to the on-call channel",
        "Sentry sampling for the payments service is set to ten percent",
        "context",
    ),
    _n(
        "same topic",
        "Integration tests spin up a throwaway Postgres container per test session",
        "Integration tests are tagged slow and skipped in the pre-commit hook",
        "pattern",
    ),
    _n(
        "same topic",
        "We squash-merge pull requests so main has one commit per change",
        "Pull request titles must reference the ticket number",
        "pattern",
    ),
    _n(
        "same topic",
        "Uploads return quickly because image resizing happens in a separate worker",
        "Uploads larger than the limit are rejected by the load balancer",
        "architecture",
    ),
    _n(
        "same topic",
        WEBHOOK,
        "Payment webhooks are verified with the provider's signing secret before they are processed",
    ),
)

# Written after the rule and the threshold were fixed, and never used to adjust them: the
# benchmark reports them apart as an estimate on notes the rule was not tuned on.
HELD_OUT = (
    _p(
        "The GitHub Actions workflow deploys to staging on every merge to main",
        "Every merge to main triggers the GitHub Actions workflow that deploys to staging",
        "context",
    ),
    _p(
        "Image thumbnails are generated lazily on first request and then cached in the CDN",
        "We generate thumbnails lazily the first time they are requested, then the CDN caches them",
        "architecture",
    ),
    _p(
        "The Postgres connection pool is capped at 20 connections per pod",
        "Each pod may open at most 20 connections in its Postgres pool",
        "context",
    ),
    _p(
        "Never log full card numbers; mask all but the last four digits",
        "Card numbers must be masked in logs except for their last four digits, never logged in full",
        "pattern",
    ),
    _p(
        "The cron that cleans expired sessions runs every 15 minutes",
        "Expired sessions are cleaned up by a cron job every 15 minutes",
        "context",
    ),
    _p(
        "Swagger UI is disabled in production builds",
        "Production builds ship with Swagger UI disabled",
        "context",
    ),
    _p(
        "We picked FastAPI over Flask for the new service because we want async handlers and typed models",
        "The new service uses FastAPI rather than Flask since we need async handlers and typed models",
    ),
    _p(
        "Mocking the clock with freezegun breaks the asyncio event loop in these tests",
        "In these tests, freezegun's frozen clock breaks the asyncio event loop",
        "gotcha",
    ),
    _p(
        "Search results are paginated with cursors, not offsets",
        "We paginate search results using cursors instead of offsets",
        "pattern",
    ),
    _p(
        "A user can belong to several organisations, and permissions are granted per organisation",
        "Permissions are granted per organisation, and one user may belong to several of them",
        "architecture",
    ),
    _p(
        "Feature branches are deleted automatically after their pull request is merged",
        "Once a pull request is merged, its feature branch gets deleted automatically",
        "pattern",
    ),
    _p(
        "The mobile release needs a manual approval in App Store Connect before it goes live",
        "Before the mobile release goes live, someone has to approve it manually in App Store Connect",
        "context",
    ),
    _p(
        "Integration tests hit a local MinIO instead of the real S3",
        "Instead of the real S3, the integration tests talk to a local MinIO",
        "pattern",
    ),
    _p(
        "The analytics events are batched and flushed every 5 seconds",
        "Analytics events get flushed in batches every 5 seconds",
        "architecture",
    ),
    _p(
        "Prefer early returns over deeply nested if statements",
        "Use early returns instead of nesting if statements deeply",
        "preference",
    ),
    _n(
        "number",
        "The Postgres connection pool is capped at 20 connections per pod",
        "The Postgres connection pool is capped at 50 connections per pod",
        "context",
    ),
    _n(
        "negation",
        "Swagger UI is disabled in production builds",
        "Swagger UI is enabled in production builds",
        "context",
    ),
    _n(
        "technology",
        "Integration tests hit a local MinIO instead of the real S3",
        "Integration tests hit a local LocalStack instead of the real S3",
        "pattern",
    ),
    _n(
        "number",
        "The cron that cleans expired sessions runs every 15 minutes",
        "The cron that cleans expired sessions runs every 15 hours",
        "context",
    ),
    _n(
        "technology",
        "We picked FastAPI over Flask for the new service",
        "We picked Flask over FastAPI for the new service",
    ),
    _n(
        "negation",
        "Feature branches are deleted automatically after their pull request is merged",
        "Feature branches are not deleted automatically after their pull request is merged",
        "pattern",
    ),
    _n(
        "identifier",
        "The rate limiter reads its limits from config/limits.yaml",
        "The rate limiter reads its limits from config/quotas.yaml",
        "architecture",
    ),
    _n(
        "version",
        "The Android app targets SDK 34 from the next release",
        "The Android app targets SDK 35 from the next release",
        "context",
    ),
    _n(
        "date",
        "The certificate for api.example.com expires on 2026-09-14",
        "The certificate for api.example.com expires on 2026-10-14",
        "context",
    ),
    _n(
        "direction",
        "Analytics events are flushed before the page unloads",
        "Analytics events are flushed after the page unloads",
        "architecture",
    ),
    _n(
        "negation",
        "Never log full card numbers",
        "Always log full card numbers for the fraud team",
        "pattern",
    ),
    _n(
        "number",
        "Mask all but the last four digits of card numbers in logs",
        "Mask all but the last two digits of card numbers in logs",
        "pattern",
    ),
    _n(
        "same topic",
        "The GitHub Actions workflow deploys to staging on every merge to main",
        "The GitHub Actions workflow caches the Docker layers between runs",
        "context",
    ),
    _n(
        "same topic",
        "Search results are paginated with cursors, not offsets",
        "Search results are ranked by recency when the query is empty",
        "pattern",
    ),
    _n(
        "same topic",
        "A user can belong to several organisations",
        "A user's organisation is chosen at login from the subdomain",
        "architecture",
    ),
)


def labelled() -> list[Labelled]:
    """Every hand-written pair the rule was calibrated on, paraphrases first."""
    return [*PARAPHRASES, *NEAR_MISSES, *SAME_TOPIC]


def held_out() -> list[Labelled]:
    """The pairs written after the rule was fixed."""
    return list(HELD_OUT)
