"""Secret kinds for the redaction corpus: provider token shapes from their published formats.

Each line is `kind|family|LABEL|description|shape`. A shape is literal text with fields that a
seeded generator fills with FAKE random characters (see `tests/support/redaction_corpus.py`):
{A:n} letters and digits, {a:n} lowercase letters and digits, {U:n} uppercase letters and
digits, {h:n} lowercase hex, {H:n} uppercase hex, {d:n} digits, {w:n} letters, digits, - and _,
{b:n} standard base64 characters, {L:n} lowercase letters, {u} a UUID, {P} a password with
symbols, {M} a 12-word mnemonic, {K} a 64-byte keypair array, {8:n} base58.
No value here was ever issued; prefixes are split with `~` (removed at load) so that
secret scanners do not flag this file.
"""

from __future__ import annotations

KIND_LINES = """
anthropic|ai|ANTHROPIC_API_KEY|Anthropic API key|sk~-ant-api03-{w:93}AA
anthropic_admin|ai|ANTHROPIC_ADMIN_KEY|Anthropic admin key|sk~-ant-admin01-{w:93}AA
openai_project|ai|OPENAI_API_KEY|OpenAI project key|sk~-proj-{w:64}T3Blb~kFJ{w:64}
openai_legacy|ai|OPENAI_KEY|OpenAI key|sk~-{A:20}T3Blb~kFJ{A:20}
openai_svcacct|ai|OPENAI_SERVICE_KEY|OpenAI service account key|sk~-svcacct-{w:64}T3Blb~kFJ{w:64}
huggingface|ai|HF_TOKEN|Hugging Face token|h~f_{A:34}
groq|ai|GROQ_API_KEY|Groq key|gs~k_{A:52}
replicate|ai|REPLICATE_API_TOKEN|Replicate token|r8~_{A:37}
perplexity|ai|PPLX_KEY|Perplexity key|pp~lx-{a:48}
cohere|ai|CO_API_KEY|Cohere key|{A:40}
mistral|ai|MISTRAL_API_KEY|Mistral key|{A:32}
voyage|ai|VOYAGE_API_KEY|Voyage key|p~a-{w:43}
deepseek|ai|DEEPSEEK_API_KEY|DeepSeek key|s~k-{h:32}
xai|ai|XAI_API_KEY|xAI key|xa~i-{A:80}
together|ai|TOGETHER_API_KEY|Together key|{h:64}
elevenlabs|ai|ELEVENLABS_API_KEY|ElevenLabs key|s~k_{h:48}
langsmith|ai|LANGSMITH_API_KEY|LangSmith key|lsv~2_pt_{h:32}_{h:10}
pinecone|ai|PINECONE_API_KEY|Pinecone key|pc~sk_{A:5}_{A:60}
wandb|ai|WANDB_API_KEY|Weights and Biases key|{h:40}
aws_access_key|cloud|AWS_ACCESS_KEY_ID|AWS access key id|AK~IA{U:16}
aws_session_key|cloud|AWS_ACCESS_KEY_ID|AWS temporary key id|AS~IA{U:16}
aws_secret|cloud|AWS_SECRET_ACCESS_KEY|AWS secret access key|{b:40}
gcp_api_key|cloud|GOOGLE_API_KEY|Google API key|AI~za{w:35}
gcp_oauth_secret|cloud|GOOGLE_CLIENT_SECRET|Google OAuth client secret|GOC~SPX-{w:28}
gcp_access_token|cloud|GOOGLE_ACCESS_TOKEN|Google access token|ya~29.{w:100}
azure_storage|cloud|AZURE_STORAGE_KEY|Azure storage account key|{b:86}==
azure_client_secret|cloud|AZURE_CLIENT_SECRET|Azure client secret|{w:3}8Q~~{w:31}
alibaba_key|cloud|ALIBABA_CLOUD_ACCESS_KEY_ID|Alibaba access key id|LT~AI{A:20}
alibaba_secret|cloud|ALIBABA_CLOUD_ACCESS_KEY_SECRET|Alibaba access key secret|{A:30}
tencent|cloud|TENCENTCLOUD_SECRET_ID|Tencent secret id|AK~ID{A:32}
ibm_cloud|cloud|IBMCLOUD_API_KEY|IBM Cloud key|{w:44}
digitalocean_pat|cloud|DIGITALOCEAN_TOKEN|DigitalOcean token|do~p_v1_{h:64}
digitalocean_oauth|cloud|DO_OAUTH_TOKEN|DigitalOcean OAuth token|do~o_v1_{h:64}
digitalocean_refresh|cloud|DO_REFRESH_TOKEN|DigitalOcean refresh token|do~r_v1_{h:64}
linode|cloud|LINODE_TOKEN|Linode token|{h:64}
vultr|cloud|VULTR_API_KEY|Vultr key|{U:36}
heroku|cloud|HEROKU_API_KEY|Heroku API key|{u}
heroku_v2|cloud|HEROKU_TOKEN|Heroku token|HR~KU-AA{w:58}
cloudflare_token|cloud|CLOUDFLARE_API_TOKEN|Cloudflare API token|{w:40}
cloudflare_global|cloud|CLOUDFLARE_API_KEY|Cloudflare global key|{h:37}
cloudflare_origin_ca|cloud|CF_ORIGIN_CA_KEY|Cloudflare origin CA key|v1~.0-{h:24}-{h:146}
fly|cloud|FLY_API_TOKEN|Fly.io token|Fly~V1 fm2_{w:100}
vercel|cloud|VERCEL_TOKEN|Vercel token|{A:24}
netlify|cloud|NETLIFY_AUTH_TOKEN|Netlify token|nf~p_{A:36}
scaleway|cloud|SCW_SECRET_KEY|Scaleway secret key|{u}
vault_service|cloud|VAULT_TOKEN|Vault token|hv~s.{w:90}
vault_batch|cloud|VAULT_BATCH_TOKEN|Vault batch token|hv~b.{w:130}
terraform_cloud|cloud|TFE_TOKEN|Terraform Cloud token|{A:14}.atlas~v1.{w:67}
doppler|cloud|DOPPLER_TOKEN|Doppler service token|dp~.st.{w:43}
pulumi|cloud|PULUMI_ACCESS_TOKEN|Pulumi token|pu~l-{h:40}
supabase|cloud|SUPABASE_ACCESS_TOKEN|Supabase token|sb~p_{h:40}
firebase_fcm|cloud|FCM_SERVER_KEY|Firebase server key|AAAA{w:7}:APA~91b{w:134}
planetscale|cloud|PLANETSCALE_TOKEN|PlanetScale token|psc~ale_tkn_{w:43}
planetscale_pw|cloud|PLANETSCALE_PASSWORD|PlanetScale password|psc~ale_pw_{w:43}
render|cloud|RENDER_API_KEY|Render key|rn~d_{A:32}
railway|cloud|RAILWAY_TOKEN|Railway token|{u}
tailscale|cloud|TS_AUTHKEY|Tailscale auth key|tsk~ey-auth-{A:10}CNTRL-{A:32}
ngrok|cloud|NGROK_AUTHTOKEN|ngrok token|{A:27}_{A:21}
mongodb_atlas|cloud|MONGODB_ATLAS_PRIVATE_KEY|MongoDB Atlas private key|{u}
github_pat|vcs|GITHUB_TOKEN|GitHub token|gh~p_{A:36}
github_oauth|vcs|GH_OAUTH_TOKEN|GitHub OAuth token|gh~o_{A:36}
github_user|vcs|GH_USER_TOKEN|GitHub user token|gh~u_{A:36}
github_app|vcs|GH_APP_TOKEN|GitHub app token|gh~s_{A:36}
github_refresh|vcs|GH_REFRESH_TOKEN|GitHub refresh token|gh~r_{A:36}
github_fine|vcs|GITHUB_PAT|GitHub fine-grained token|github~_pat_{A:22}_{A:59}
gitlab_pat|vcs|GITLAB_TOKEN|GitLab token|gl~pat-{w:20}
gitlab_trigger|vcs|GITLAB_TRIGGER|GitLab trigger token|gl~ptt-{h:40}
gitlab_runner_reg|vcs|RUNNER_REG_TOKEN|GitLab runner registration token|GR~1348941{w:20}
gitlab_runner|vcs|RUNNER_TOKEN|GitLab runner token|gl~rt-{w:20}
gitlab_deploy|vcs|GITLAB_DEPLOY_TOKEN|GitLab deploy token|gl~dt-{w:20}
bitbucket|vcs|BITBUCKET_APP_PASSWORD|Bitbucket app password|AT~BB{A:32}
atlassian|vcs|JIRA_API_TOKEN|Atlassian API token|ATA~TT3xFfGF0{w:183}
circleci|vcs|CIRCLE_TOKEN|CircleCI token|CCI~PAT_{A:22}_{h:40}
travis|vcs|TRAVIS_TOKEN|Travis token|{w:22}
buildkite|vcs|BUILDKITE_API_TOKEN|Buildkite token|bk~ua_{h:40}
sonarqube_user|vcs|SONAR_TOKEN|SonarQube token|sq~u_{h:40}
sonarqube_project|vcs|SONAR_PROJECT_TOKEN|SonarQube project token|sq~p_{h:40}
codecov|vcs|CODECOV_TOKEN|Codecov token|{u}
snyk|vcs|SNYK_TOKEN|Snyk token|{u}
npm|vcs|NPM_TOKEN|npm token|np~m_{A:36}
pypi|vcs|PYPI_TOKEN|PyPI token|py~pi-AgEIcHlwaS5vcmc{w:70}
rubygems|vcs|GEM_HOST_API_KEY|RubyGems key|rubyg~ems_{h:48}
nuget|vcs|NUGET_API_KEY|NuGet key|oy~2{a:43}
docker_pat|vcs|DOCKERHUB_TOKEN|Docker Hub token|dck~r_pat_{w:27}
jfrog|vcs|JFROG_API_KEY|JFrog key|AK~Cp{A:69}
clojars|vcs|CLOJARS_DEPLOY_TOKEN|Clojars token|CLOJ~ARS_{a:60}
octopus|vcs|OCTOPUS_API_KEY|Octopus key|AP~I-{U:26}
jenkins|vcs|JENKINS_API_TOKEN|Jenkins token|{h:34}
drone|vcs|DRONE_TOKEN|Drone token|{A:32}
harness|vcs|HARNESS_PAT|Harness token|pa~t.{w:22}.{h:24}.{w:20}
postman|vcs|POSTMAN_API_KEY|Postman key|PM~AK-{h:24}-{h:34}
stripe_secret|payments|STRIPE_SECRET_KEY|Stripe secret key|s~k_live_{A:24}
stripe_test|payments|STRIPE_TEST_KEY|Stripe test secret key|s~k_test_{A:24}
stripe_restricted|payments|STRIPE_RESTRICTED_KEY|Stripe restricted key|r~k_live_{A:24}
stripe_webhook|payments|STRIPE_WEBHOOK_SECRET|Stripe webhook signing secret|wh~sec_{A:32}
square_access|payments|SQUARE_ACCESS_TOKEN|Square access token|EA~AA{w:60}
square_oauth|payments|SQUARE_OAUTH_SECRET|Square OAuth secret|sq0~csp-{w:43}
braintree|payments|BRAINTREE_ACCESS_TOKEN|Braintree access token|access_~token$production${a:16}${h:32}
razorpay|payments|RAZORPAY_KEY_SECRET|Razorpay key|rz~p_live_{A:14}
flutterwave|payments|FLW_SECRET_KEY|Flutterwave secret key|FLW~SECK-{h:32}-X
paystack|payments|PAYSTACK_SECRET_KEY|Paystack secret key|s~k_live_{h:40}
plaid_secret|payments|PLAID_SECRET|Plaid secret|{h:30}
plaid_access|payments|PLAID_ACCESS_TOKEN|Plaid access token|access-~production-{u}
shippo|payments|SHIPPO_API_KEY|Shippo key|shippo~_live_{h:40}
easypost|payments|EASYPOST_API_KEY|EasyPost key|EZ~AK{h:54}
coinbase|payments|COINBASE_API_SECRET|Coinbase secret|{A:32}
mollie|payments|MOLLIE_API_KEY|Mollie key|liv~e_{A:30}
checkout|payments|CKO_SECRET_KEY|Checkout.com secret key|s~k_sbox_{a:26}
duffel|payments|DUFFEL_TOKEN|Duffel token|duf~fel_live_{w:43}
lob|payments|LOB_API_KEY|Lob key|liv~e_{h:35}
slack_bot|comms|SLACK_BOT_TOKEN|Slack bot token|xo~xb-{d:11}-{d:13}-{A:24}
slack_user|comms|SLACK_USER_TOKEN|Slack user token|xo~xp-{d:11}-{d:11}-{d:13}-{h:32}
slack_app|comms|SLACK_APP_TOKEN|Slack app token|xa~pp-1-{U:11}-{d:13}-{h:64}
slack_webhook|comms|SLACK_WEBHOOK_URL|Slack webhook|https://hooks.sla~ck.com/services/T{U:8}/B{U:10}/{A:24}
discord_bot|comms|DISCORD_BOT_TOKEN|Discord bot token|MT~{A:22}.{w:6}.{w:38}
discord_webhook|comms|DISCORD_WEBHOOK|Discord webhook|https://discord.com/api/web~hooks/{d:19}/{w:68}
telegram|comms|TELEGRAM_BOT_TOKEN|Telegram bot token|{d:10}:A~A{w:33}
twilio_key|comms|TWILIO_API_KEY|Twilio API key|S~K{h:32}
twilio_auth|comms|TWILIO_AUTH_TOKEN|Twilio auth token|{h:32}
sendgrid|comms|SENDGRID_API_KEY|SendGrid key|S~G.{w:22}.{w:43}
mailgun|comms|MAILGUN_API_KEY|Mailgun key|ke~y-{h:32}
mailchimp|comms|MAILCHIMP_API_KEY|Mailchimp key|{h:32}-us14
postmark|comms|POSTMARK_SERVER_TOKEN|Postmark token|{u}
mailjet|comms|MJ_APIKEY_PRIVATE|Mailjet private key|{h:32}
brevo|comms|BREVO_API_KEY|Brevo key|xkey~sib-{h:64}-{A:16}
vonage|comms|VONAGE_API_SECRET|Vonage secret|{A:16}
teams_webhook|comms|TEAMS_WEBHOOK_URL|Teams webhook|https://acme.webhook.office.com/webhookb2/{u}@{u}/IncomingWebhook/{h:32}/{u}
zoom|comms|ZOOM_CLIENT_SECRET|Zoom client secret|{A:32}
intercom|comms|INTERCOM_TOKEN|Intercom token|dG9r~Oj{w:54}=
pusher|comms|PUSHER_APP_SECRET|Pusher secret|{h:20}
ably|comms|ABLY_API_KEY|Ably key|{A:6}.{A:6}:{w:43}
line|comms|LINE_CHANNEL_ACCESS_TOKEN|LINE channel token|{b:172}
messagebird|comms|MESSAGEBIRD_ACCESS_KEY|MessageBird key|{A:25}
telnyx|comms|TELNYX_API_KEY|Telnyx key|KE~Y{H:32}_{w:22}
plivo|comms|PLIVO_AUTH_TOKEN|Plivo auth token|{A:40}
datadog_api|monitoring|DD_API_KEY|Datadog API key|{h:32}
datadog_app|monitoring|DD_APP_KEY|Datadog application key|{h:40}
newrelic_user|monitoring|NEW_RELIC_API_KEY|New Relic user key|NR~AK-{U:27}
newrelic_insert|monitoring|NEW_RELIC_INSERT_KEY|New Relic insert key|NR~II-{w:32}
newrelic_browser|monitoring|NEW_RELIC_BROWSER_KEY|New Relic browser key|NR~JS-{h:19}
sentry_user|monitoring|SENTRY_AUTH_TOKEN|Sentry user token|sntr~yu_{h:64}
sentry_org|monitoring|SENTRY_ORG_TOKEN|Sentry org token|sntr~ys_{w:120}
honeycomb|monitoring|HONEYCOMB_API_KEY|Honeycomb key|{A:22}
grafana_cloud|monitoring|GRAFANA_CLOUD_TOKEN|Grafana Cloud token|gl~c_{w:80}
grafana_sa|monitoring|GRAFANA_SA_TOKEN|Grafana service account token|gl~sa_{A:32}_{h:8}
pagerduty|monitoring|PAGERDUTY_TOKEN|PagerDuty token|u+{w:18}
opsgenie|monitoring|OPSGENIE_API_KEY|Opsgenie key|{u}
splunk_hec|monitoring|SPLUNK_HEC_TOKEN|Splunk HEC token|{u}
logdna|monitoring|LOGDNA_INGESTION_KEY|LogDNA key|{h:32}
rollbar|monitoring|ROLLBAR_ACCESS_TOKEN|Rollbar token|{h:32}
bugsnag|monitoring|BUGSNAG_API_KEY|Bugsnag key|{h:32}
dynatrace|monitoring|DT_API_TOKEN|Dynatrace token|dt~0c01.{U:24}.{U:64}
launchdarkly_sdk|monitoring|LD_SDK_KEY|LaunchDarkly SDK key|sd~k-{u}
launchdarkly_api|monitoring|LD_API_KEY|LaunchDarkly API key|ap~i-{u}
posthog_personal|monitoring|POSTHOG_PERSONAL_API_KEY|PostHog personal key|ph~x_{A:43}
segment|monitoring|SEGMENT_WRITE_KEY|Segment write key|{A:32}
mixpanel|monitoring|MIXPANEL_API_SECRET|Mixpanel secret|{h:32}
hubspot_pat|saas|HUBSPOT_ACCESS_TOKEN|HubSpot private app token|pa~t-na1-{u}
hubspot_key|saas|HUBSPOT_API_KEY|HubSpot key|{u}
salesforce|saas|SF_ACCESS_TOKEN|Salesforce token|00~D{A:12}!{w:96}
shopify_access|saas|SHOPIFY_ACCESS_TOKEN|Shopify access token|sh~pat_{h:32}
shopify_shared|saas|SHOPIFY_SHARED_SECRET|Shopify shared secret|sh~pss_{h:32}
shopify_custom|saas|SHOPIFY_CUSTOM_TOKEN|Shopify custom app token|sh~pca_{h:32}
airtable|saas|AIRTABLE_TOKEN|Airtable token|pa~t{A:14}.{h:64}
notion|saas|NOTION_TOKEN|Notion token|secr~et_{A:43}
notion_ntn|saas|NOTION_API_KEY|Notion key|nt~n_{d:11}{A:35}
linear_api|saas|LINEAR_API_KEY|Linear key|lin~_api_{A:40}
linear_oauth|saas|LINEAR_OAUTH_TOKEN|Linear OAuth token|lin~_oauth_{h:64}
asana|saas|ASANA_TOKEN|Asana token|2/{d:16}/{d:16}:{h:32}
trello|saas|TRELLO_TOKEN|Trello token|AT~TA{h:64}{H:8}
clickup|saas|CLICKUP_TOKEN|ClickUp token|p~k_{d:8}_{U:32}
figma|saas|FIGMA_TOKEN|Figma token|fi~gd_{w:40}
typeform|saas|TYPEFORM_TOKEN|Typeform token|tf~p_{w:44}_{w:14}
contentful|saas|CONTENTFUL_TOKEN|Contentful token|CF~PAT-{w:43}
dropbox|saas|DROPBOX_TOKEN|Dropbox token|s~l.{w:135}
okta|saas|OKTA_API_TOKEN|Okta token|0~0{w:40}
auth0|saas|AUTH0_CLIENT_SECRET|Auth0 client secret|{w:64}
twitter_bearer|saas|TWITTER_BEARER_TOKEN|Twitter bearer token|AAAAAAAAAAAAAAAAAAAAA{w:80}
facebook|saas|FB_ACCESS_TOKEN|Facebook token|EAA~CEdEose0cBA{A:100}
mapbox|saas|MAPBOX_SECRET_TOKEN|Mapbox secret token|s~k.eyJ1{w:60}.{w:22}
algolia|saas|ALGOLIA_ADMIN_KEY|Algolia admin key|{h:32}
onepassword|saas|OP_SERVICE_ACCOUNT_TOKEN|1Password service token|op~s_eyJ{w:100}
age_secret|crypto|AGE_SECRET_KEY|age secret key|AGE-SE~CRET-KEY-1{U:58}
prefect|saas|PREFECT_API_KEY|Prefect key|pn~u_{A:36}
readme|saas|README_API_KEY|ReadMe key|rd~me_{a:70}
frameio|saas|FRAMEIO_TOKEN|Frame.io token|fi~o-u-{w:64}
yandex|saas|YANDEX_OAUTH_TOKEN|Yandex token|y~0_{w:55}
adobe|saas|ADOBE_CLIENT_SECRET|Adobe client secret|p8~e-{w:32}
shortcut|saas|SHORTCUT_API_TOKEN|Shortcut token|{u}
sumologic|saas|SUMO_ACCESS_KEY|Sumo Logic key|{A:64}
cloudinary|saas|CLOUDINARY_URL|Cloudinary URL|cloudinary://{d:15}:{w:27}@acme
jwt|generic|SESSION_TOKEN|session JWT|ey~JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ~zdWIiOi{w:40}.{w:43}
hex_salt|generic|APP_SALT|application salt|{h:64}
hex_seed|generic|MASTER_SEED|master seed|{h:64}
hex_signing|generic|COOKIE_SIGNING|cookie signing value|{h:40}
hex_hmac|generic|HMAC|webhook HMAC value|{h:64}
eth_private|crypto|ETH_PRIVATE_KEY|Ethereum private key|0x{h:64}
btc_wif|crypto|BTC_WIF|Bitcoin WIF key|5K{8:49}
mnemonic|crypto|WALLET_MNEMONIC|wallet recovery phrase|{M}
keypair|crypto|SOLANA_KEYPAIR|Solana keypair|{K}
password_env|password|DB_PASSWORD|database password|{P}
password_prose|password|ADMIN_PASSWORD|staging admin password|{P}
password_yaml|password|SMTP_PASSWORD|SMTP password|{P}
passphrase|password|GPG_PASSPHRASE|GPG passphrase|{P}
"""

# Command lines per kind family: `{v}` the value, `{n}` the label, `{l}` the label lowercased.
COMMANDS = (
    "docker run -e {n}={v} acme/api:1.4",
    'curl -H "Authorization: Bearer {v}" https://api.acme.io/v1/me',
    "kubectl create secret generic app --from-literal={l}={v}",
    "heroku config:set {n}={v} -a acme-api",
    "gh secret set {n} --body '{v}'",
    "helm upgrade api ./chart --set secrets.{l}={v}",
    "terraform apply -var '{l}={v}'",
    "{n}={v} npm run deploy",
)
PASSWORD_COMMANDS = (
    "curl -u deploy:{v} https://ci.acme.io/api/json",
    "mysql -h db.acme.io -u root -p{v} app",
    "sshpass -p '{v}' ssh admin@10.0.4.7",
    "docker login -u acme -p '{v}' registry.acme.io",
    "redis-cli -h cache -a '{v}' ping",
    "java -Dspring.datasource.password={v} -jar app.jar",
    "helm install db ./pg --set auth.password='{v}'",
    "terraform apply -var 'db_password={v}'",
    "echo 'machine api.acme.io login bot password {v}' >> ~/.netrc",
    "psql 'host=db.acme.io port=5432 user=app password={v} dbname=app'",
    'dotnet run --connection "Server=tcp:db.acme.io;Database=app;User Id=sa;Password={v};"',
    "export DSN='Data Source=db;Initial Catalog=app;Uid=sa;Pwd={v};'",
    "JDBC_URL=jdbc:postgresql://db:5432/app?user=app&password={v}",
    'nuget sources add -Name acme -Source https://nuget.acme.io -Password "{v}"',
    'add key="ClearTextPassword" value="{v}"',
)
URLS = (
    "https://api.acme.io/v1/events?access_token={v}&limit=10",
    "https://hooks.acme.io/ingest?api_key={v}",
    "https://deploy:{v}@git.acme.io/acme/api.git",
    "https://app.acme.io/callback?code=ok&token={v}",
)
PASSWORD_URLS = (
    "postgres://app:{v}@db.acme.io:5432/app",
    "mysql://root:{v}@tcp(db.acme.io:3306)/app",
    "app:{v}@tcp(db.acme.io:3306)/app?parseTime=true",
    "amqp://guest:{v}@rabbit.acme.io:5672/",
    "mongodb+srv://admin:{v}@cluster0.ab1cd.mongodb.net/test",
)
PROSE = (
    "fyi the {d} is {v} until we rotate it",
    "Remember: our {d} is {v}",
    "I set the {d} to {v} for staging",
    "the {d} we use in prod: {v}",
)
