"""Look-alikes that are public by design, for the redaction corpus: redaction must leave them.

Each line is `kind|template`; the part between `[[` and `]]` is the substring that must
survive redaction unchanged. Fields are filled by the same seeded generator as the secrets
(see `tests/support/corpus_kinds.py` for the field syntax), plus {C:n} Crockford base32,
{z:n} lowercase base32, {q:n} bech32 and {n:n} nix base32.
"""

from __future__ import annotations

SAFE_LINES = r"""
npm_integrity|"integrity": "[[sha512-{b:86}==]]"
npm_integrity|  resolved "https://registry.yarnpkg.com/left-pad/-/left-pad-1.3.0.tgz#[[{h:40}]]"
sri_hash|<script src="/app.js" integrity="[[sha384-{b:64}]]" crossorigin="anonymous"></script>
sri_hash|<link rel="stylesheet" integrity="[[sha256-{b:43}=]]" href="/main.css">
nix_hash|    hash = "[[sha256-{b:43}=]]";
nix_store|built [[/nix/store/{n:32}-python3-3.12.4]]
go_sum|github.com/stretchr/testify v1.9.0 [[h1:{b:43}=]]
go_sum|golang.org/x/sys v0.21.0/go.mod [[h1:{b:43}=]]
pip_hash|requests==2.32.3 --hash=[[sha256:{h:64}]]
cargo_lock|checksum = "[[{h:64}]]"
terraform_lock|    "[[zh:{h:64}]]",
git_commit|commit [[{h:40}]] fixed the race in the worker
git_commit|cherry-picked [[{h:40}]] onto release/1.4
git_short|pushed [[{h:7}]]..[[{h:7}]] main -> main
docker_digest|image: ghcr.io/acme/api@[[sha256:{h:64}]]
docker_container|docker ps shows container [[{h:12}]] restarting
content_digest|stored blob digest [[sha256:{h:64}]]
etag|ETag: "[[{h:32}]]"
base64_fixture|fixture = b64decode("[[{B}]]")
base64_json|metadata: [[{J}]]
data_uri|<img src="[[data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB{b:40}AAAAAElFTkSuQmCC]]">
ulid|event [[01{C:24}]] was replayed
ulid|order_id=[[01{C:24}]]
nanoid|short link [[{w:21}]] expired
ipfs_cid_v0|pinned [[Qm{8:44}]] to the cluster
ipfs_cid_v1|ipfs://[[bafybei{z:52}]]
ssh_ed25519|[[ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b:43}]] deploy@ci
ssh_rsa|authorized_keys: [[ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{b:300}]] me@laptop
age_public|recipient [[age1{q:58}]]
certificate_pem|-----BEGIN CERTIFICATE-----\n[[{b:64}]]\n{b:64}\n{b:40}==\n-----END CERTIFICATE-----
public_key_pem|-----BEGIN PUBLIC KEY-----\n[[{b:64}]]\n{b:28}==\n-----END PUBLIC KEY-----
stripe_object|refunded charge [[ch_{A:24}]] for customer [[cus_{A:14}]]
stripe_object|the payment intent [[pi_{A:24}]] succeeded
stripe_object|"price": "[[price_{A:24}]]", "product": "[[prod_{A:14}]]"
stripe_object|webhook event [[evt_{A:24}]] retried
pod_name|kubectl logs [[api-{a:10}-{a:5}]] -n prod
pod_name|pod [[worker-{h:9}-{a:5}]] OOMKilled
placeholder|STRIPE_SECRET_KEY=[[sk_test_xxxxxxxxxxxxxxxxxxxxxxxx]]
placeholder|AWS_ACCESS_KEY_ID=[[AKIAXXXXXXXXXXXXXXXX]]
placeholder|GITHUB_TOKEN=[[ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX]]
placeholder|api_key: "[[<your-api-key>]]"
placeholder|AUTH_TOKEN=[[<keep your existing token>]]
placeholder|deploy --api-token [[<the token from the dashboard>]] --prod
placeholder|password: [[changeme]]
placeholder|export OPENAI_API_KEY=[[sk-...]]
placeholder|token = "[[${GITHUB_TOKEN}]]"
uuid_id|request [[{u}]] timed out
uuid_id|session [[{u}]] resumed on branch main
aws_arn|assume [[arn:aws:iam::{d:12}:role/Deploy]]
aws_ids|launched [[i-0{h:16}]] from [[ami-0{h:16}]] in [[subnet-0{h:16}]]
aws_account|account [[{d:12}]] in us-east-1
semver|bumped to [[{d:1}.{d:2}.{d:3}]] and tagged
chunk_hash|served [[/_next/static/chunks/main-{h:16}.js]]
webpack|emitted [[app.{h:20}.bundle.js]]
css_color|.btn { color: [[#{h:6}]]; }
slack_ids|posted to channel [[C0{U:9}]] by [[U0{U:9}]]
snowflake|discord user [[{d:18}]] joined
telegram_chat|chat id [[-100{d:10}]]
gdrive_id|https://docs.google.com/document/d/[[1{w:43}]]/edit
youtube|https://www.youtube.com/watch?v=[[{w:11}]]
openai_ids|completion [[chatcmpl-{A:29}]] used [[file-{A:24}]]
anthropic_ids|assistant [[msg_01{A:22}]] called [[toolu_01{A:22}]]
gpg_fpr|key fingerprint [[{H:4} {H:4} {H:4} {H:4} {H:4}  {H:4} {H:4} {H:4} {H:4} {H:4}]]
mac_address|eth0 [[{h:2}:{h:2}:{h:2}:{h:2}:{h:2}:{h:2}]]
ipv6|listening on [[2001:db8:{h:4}:{h:4}::{h:2}]]
btc_address|donations to [[bc1q{q:38}]]
eth_address|contract [[0x{h:40}]] deployed
eth_tx|tx [[0x{h:64}]] confirmed in block {d:8}
solana_pubkey|wallet public key [[{8:44}]]
mongo_id|ObjectId("[[{h:24}]]")
github_blob|https://github.com/acme/api/blob/[[{h:40}]]/README.md
k8s_uid|uid: [[{u}]]
feature_flag|enable [[enable_new_checkout_flow_v{d:1}]] for beta users
identifier|class [[UserProfileSettingsController{d:2}]] handles it
identifier|def [[test_extract_candidates_handles_deep_nesting_{d:2}]]() -> None:
tls_suite|cipher [[TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]] negotiated
model_id|model [[claude-opus-4-{d:1}]] with 384-dim embeddings
path|edited [[src/components/UserProfile{d:2}/SettingsPanel.tsx]]
path|[[~/.claude/projects/-home-dev-proj/{u}.jsonl]]
url_no_password|connect to [[postgres://localhost:5432/app{d:2}]]
url_no_password|clone [[ssh://git@github.com/acme/api{d:2}.git]]
sentry_public|Sentry.init({ dsn: "[[https://{h:32}@o{d:6}.ingest.sentry.io/{d:7}]]" })
code_token_var|token = [[get_token()]]
code_token_var|headers = {"Authorization": [[f"Bearer {token}"]]}
code_password_var|password = [[request.form['password']]]
numbers|[[{d:3} tests, 0 failures]] in {d:2}.{d:1}s
version_hash|python [[3.12.{d:1}+{h:9}]]
lockfile_hash|"[[@esbuild/linux-x64@0.21.{d:1}]]": "[[sha512-{b:86}==]]"
hex_color_list|palette: [[#{h:6} #{h:6} #{h:6}]]
prose|We decided to keep [[SQLite with WAL mode]] because several sessions write at once.
prose|The token endpoint moved to [[/oauth/v{d:1}/token]] last week.
prose|Use a [[password manager]] and never commit .env files.
"""
