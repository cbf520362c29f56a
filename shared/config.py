"""One Settings object for every service: environment first, then `.env` (python-dotenv)."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from dotenv import dotenv_values
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PLACEHOLDER_SECRETS = {"", "change-me", "changeme", "replace-me", "xxx", "secret"}


class Settings(BaseSettings):
    """Every tunable of the stack; names match `.env.example`."""

    model_config = SettingsConfigDict(extra="ignore", case_sensitive=False, populate_by_name=True)

    env: str = Field("development", alias="HSTACK_ENV")
    data_dir: Path = Field(Path("./data"), alias="DATA_DIR")
    database_url: str | None = Field(None, alias="DATABASE_URL")
    redis_url: str | None = Field(None, alias="REDIS_URL")
    redis_password: SecretStr | None = Field(None, alias="REDIS_PASSWORD")
    api_host: str = Field("127.0.0.1", alias="API_HOST")
    api_port: int = Field(8642, alias="API_PORT")
    admin_api_key: SecretStr | None = Field(None, alias="ADMIN_API_KEY")
    metrics_token: SecretStr | None = Field(None, alias="METRICS_TOKEN")

    llm_base_url: str | None = Field(None, alias="LLM_BASE_URL")
    llm_api_key: SecretStr | None = Field(None, alias="LLM_API_KEY")
    llm_model: str | None = Field(None, alias="LLM_MODEL")
    llm_fallback_model: str | None = Field(None, alias="LLM_FALLBACK_MODEL")
    llm_timeout_seconds: float = Field(120.0, alias="LLM_TIMEOUT_SECONDS")
    llm_max_retries: int = Field(3, alias="LLM_MAX_RETRIES")
    llm_backoff_base_seconds: float = Field(2.0, alias="LLM_BACKOFF_BASE_SECONDS")
    llm_backoff_max_seconds: float = Field(60.0, alias="LLM_BACKOFF_MAX_SECONDS")
    llm_retry_after_cap_seconds: float = Field(600.0, alias="LLM_RETRY_AFTER_CAP_SECONDS")

    approval_mode: str = Field("smart", alias="APPROVAL_MODE")
    approval_deny_patterns: str = Field("", alias="APPROVAL_DENY_PATTERNS")
    approval_max_command_chars: int = Field(10_000, ge=100, le=100_000, alias="APPROVAL_MAX_COMMAND_CHARS")
    approval_timeout_seconds: float = Field(300.0, gt=0, alias="APPROVAL_TIMEOUT_SECONDS")
    clarify_timeout_seconds: float = Field(600.0, gt=0, alias="CLARIFY_TIMEOUT_SECONDS")
    delegate_max_children: int = Field(3, ge=0, le=16, alias="DELEGATE_MAX_CHILDREN")
    delegate_max_iterations: int = Field(50, ge=1, le=1000, alias="DELEGATE_MAX_ITERATIONS")
    delegate_child_timeout_seconds: float = Field(600.0, gt=0, alias="DELEGATE_CHILD_TIMEOUT_SECONDS")
    approval_guardian_model: str | None = Field(None, alias="APPROVAL_GUARDIAN_MODEL")
    approval_guardian_timeout_seconds: float = Field(30.0, gt=0, alias="APPROVAL_GUARDIAN_TIMEOUT_SECONDS")

    terminal_sandbox: str = Field("bwrap", alias="TERMINAL_SANDBOX")
    terminal_network: bool = Field(True, alias="TERMINAL_NETWORK")
    terminal_network_allow: str = Field("", alias="TERMINAL_NETWORK_ALLOW")
    terminal_network_max_connections: int = Field(32, ge=1, alias="TERMINAL_NETWORK_MAX_CONNECTIONS")
    terminal_env_passthrough: str = Field("", alias="TERMINAL_ENV_PASSTHROUGH")
    terminal_cpu_seconds: int = Field(300, ge=1, alias="TERMINAL_CPU_SECONDS")
    terminal_memory_mb: int = Field(4096, ge=16, alias="TERMINAL_MEMORY_MB")
    terminal_max_processes: int = Field(256, ge=4, alias="TERMINAL_MAX_PROCESSES")
    terminal_max_file_mb: int = Field(1024, ge=1, alias="TERMINAL_MAX_FILE_MB")
    terminal_tmp_mb: int = Field(256, ge=1, alias="TERMINAL_TMP_MB")
    terminal_workspace_quota_mb: int = Field(5120, ge=1, alias="TERMINAL_WORKSPACE_QUOTA_MB")
    terminal_output_keep_mb: int = Field(8, ge=1, alias="TERMINAL_OUTPUT_KEEP_MB")
    terminal_outputs_max_files: int = Field(50, ge=1, alias="TERMINAL_OUTPUTS_MAX_FILES")
    terminal_outputs_max_mb: int = Field(256, ge=1, alias="TERMINAL_OUTPUTS_MAX_MB")
    terminal_sandbox_uid: int = Field(65534, ge=1, alias="TERMINAL_SANDBOX_UID")
    terminal_max_background: int = Field(4, ge=0, alias="TERMINAL_MAX_BACKGROUND")
    terminal_background_lifetime_seconds: float = Field(3600.0, gt=0, alias="TERMINAL_BACKGROUND_LIFETIME_SECONDS")
    terminal_max_timeout_seconds: float = Field(600.0, gt=0, alias="TERMINAL_MAX_TIMEOUT_SECONDS")

    max_iterations: int = Field(90, alias="AGENT_MAX_ITERATIONS")
    tool_timeout_seconds: float = Field(120.0, gt=0, alias="TOOL_TIMEOUT_SECONDS")
    max_input_bytes: int = Field(256 * 1024, alias="MAX_INPUT_BYTES")
    turn_lease_seconds: float = Field(30.0, alias="TURN_LEASE_SECONDS")
    turn_heartbeat_seconds: float = Field(1.0, alias="TURN_HEARTBEAT_SECONDS")
    forget_cancel_wait_seconds: float = Field(10.0, ge=0, alias="FORGET_CANCEL_WAIT_SECONDS")
    turn_requeue_after_seconds: float = Field(30.0, alias="TURN_REQUEUE_AFTER_SECONDS")
    sweep_interval_seconds: float = Field(15.0, alias="SWEEP_INTERVAL_SECONDS")
    event_stream_ttl_seconds: int = Field(24 * 3600, alias="EVENT_STREAM_TTL_SECONDS")
    chat_completion_timeout_seconds: float = Field(600.0, alias="CHAT_COMPLETION_TIMEOUT_SECONDS")
    worker_concurrency: int = Field(200, alias="WORKER_CONCURRENCY")
    worker_processes: int = Field(0, ge=0, le=64, alias="WORKER_PROCESSES")  # `hstack run` only; 0: one per core
    max_running_turns_per_user: int = Field(4, ge=0, alias="MAX_RUNNING_TURNS_PER_USER")
    worker_shutdown_grace_seconds: float = Field(8.0, gt=0, alias="WORKER_SHUTDOWN_GRACE_SECONDS")
    rate_limit_per_minute: int = Field(600, ge=0, alias="RATE_LIMIT_PER_MINUTE")
    turn_rate_limit_per_minute: int = Field(60, ge=0, alias="TURN_RATE_LIMIT_PER_MINUTE")
    auth_failures_per_minute: int = Field(30, ge=0, alias="AUTH_FAILURES_PER_MINUTE")
    trusted_proxies: str = Field("", alias="TRUSTED_PROXIES")
    broker_key_prefix: str = Field("", alias="BROKER_KEY_PREFIX")
    log_level: str = Field("INFO", alias="LOG_LEVEL")
    log_format: str = Field("json", alias="LOG_FORMAT")
    search_hybrid: bool = Field(False, alias="SEARCH_HYBRID")
    search_hybrid_weight: float = Field(1.0, ge=0, alias="SEARCH_HYBRID_WEIGHT")
    embeddings_model: str | None = Field(None, alias="EMBEDDINGS_MODEL")
    embeddings_base_url: str | None = Field(None, alias="EMBEDDINGS_BASE_URL")
    embeddings_api_key: SecretStr | None = Field(None, alias="EMBEDDINGS_API_KEY")
    embeddings_dimensions: int | None = Field(None, ge=1, le=16_384, alias="EMBEDDINGS_DIMENSIONS")
    embeddings_batch_size: int = Field(64, ge=1, le=2048, alias="EMBEDDINGS_BATCH_SIZE")
    session_titles: bool = Field(True, alias="SESSION_TITLES")
    memory_review_interval: int = Field(10, ge=0, alias="MEMORY_REVIEW_INTERVAL")
    skill_review_interval: int = Field(10, ge=0, alias="SKILL_REVIEW_INTERVAL")
    review_max_iterations: int = Field(16, ge=1, alias="REVIEW_MAX_ITERATIONS")
    review_lease_seconds: float = Field(60.0, gt=0, alias="REVIEW_LEASE_SECONDS")
    curator_enabled: bool = Field(True, alias="CURATOR_ENABLED")
    curator_check_seconds: float = Field(3600.0, gt=0, alias="CURATOR_CHECK_SECONDS")
    curator_interval_hours: float = Field(168.0, gt=0, alias="CURATOR_INTERVAL_HOURS")
    curator_min_idle_hours: float = Field(2.0, ge=0, alias="CURATOR_MIN_IDLE_HOURS")
    curator_stale_after_days: float = Field(14.0, gt=0, alias="CURATOR_STALE_AFTER_DAYS")
    curator_archive_after_days: float = Field(30.0, gt=0, alias="CURATOR_ARCHIVE_AFTER_DAYS")
    curator_backups_keep: int = Field(5, ge=1, alias="CURATOR_BACKUPS_KEEP")
    curator_consolidate: bool = Field(False, alias="CURATOR_CONSOLIDATE")
    curator_consolidate_max_calls: int = Field(3, ge=1, le=50, alias="CURATOR_CONSOLIDATE_MAX_CALLS")
    backup_interval_hours: float = Field(0.0, ge=0, alias="BACKUP_INTERVAL_HOURS")
    backup_keep: int = Field(7, ge=1, alias="BACKUP_KEEP")
    expiry_sweep_seconds: float = Field(3600.0, gt=0, alias="EXPIRY_SWEEP_SECONDS")
    cron_tick_seconds: float = Field(10.0, gt=0, alias="CRON_TICK_SECONDS")
    cron_grace_seconds: float = Field(3600.0, ge=0, alias="CRON_GRACE_SECONDS")
    cron_claim_batch: int = Field(200, ge=1, le=5000, alias="CRON_CLAIM_BATCH")
    evolve_metric_calls: int = Field(60, ge=4, le=100_000, alias="EVOLVE_METRIC_CALLS")
    evolve_run_tokens: int = Field(400_000, ge=1_000, alias="EVOLVE_RUN_TOKENS")
    evolve_daily_runs: int = Field(5, ge=0, alias="EVOLVE_DAILY_RUNS")
    evolve_daily_tokens: int = Field(2_000_000, ge=0, alias="EVOLVE_DAILY_TOKENS")
    evolve_margin: float = Field(0.1, ge=0, le=1, alias="EVOLVE_MARGIN")
    evolve_min_sessions: int = Field(4, ge=2, alias="EVOLVE_MIN_SESSIONS")
    evolve_max_sessions: int = Field(24, ge=2, le=500, alias="EVOLVE_MAX_SESSIONS")
    evolve_max_skill_chars: int = Field(20_000, ge=500, le=100_000, alias="EVOLVE_MAX_SKILL_CHARS")
    evolve_schedule_hours: float = Field(0.0, ge=0, alias="EVOLVE_SCHEDULE_HOURS")
    stream_sweep_scan_limit: int = Field(10_000, ge=10, alias="STREAM_SWEEP_SCAN_LIMIT")
    memory_provider: str = Field("recall", alias="MEMORY_PROVIDER")
    memory_provider_modules: str = Field("", alias="MEMORY_PROVIDER_MODULES")
    session_idle_end_hours: float = Field(24.0, ge=0, alias="SESSION_IDLE_END_HOURS")
    provider_prefetch_timeout_seconds: float = Field(8.0, gt=0, alias="PROVIDER_PREFETCH_TIMEOUT_SECONDS")
    recall_max_messages: int = Field(3, ge=0, alias="RECALL_MAX_MESSAGES")
    recall_max_chars: int = Field(1500, ge=0, alias="RECALL_MAX_CHARS")
    recall_min_coverage: float = Field(0.5, ge=0, le=1, alias="RECALL_MIN_COVERAGE")
    recall_min_terms: int = Field(2, ge=1, alias="RECALL_MIN_TERMS")
    bundled_skills_dir: Path = Field(Path(__file__).resolve().parent / "bundled_skills", alias="BUNDLED_SKILLS_DIR")
    compression_enabled: bool = Field(True, alias="COMPRESSION_ENABLED")
    compression_threshold: float = Field(0.5, gt=0, le=1, alias="COMPRESSION_THRESHOLD")
    compression_floor_tokens: int = Field(64_000, ge=0, alias="COMPRESSION_FLOOR_TOKENS")
    compression_small_window_share: float = Field(0.75, gt=0, le=1, alias="COMPRESSION_SMALL_WINDOW_SHARE")
    compression_target_ratio: float = Field(0.2, ge=0.1, le=0.8, alias="COMPRESSION_TARGET_RATIO")
    compression_protect_first_n: int = Field(3, ge=0, alias="COMPRESSION_PROTECT_FIRST_N")
    compression_protect_last_n: int = Field(20, ge=1, alias="COMPRESSION_PROTECT_LAST_N")
    llm_context_window: int = Field(128_000, ge=512, alias="LLM_CONTEXT_WINDOW")
    memory_char_limit: int = Field(2200, ge=100, alias="MEMORY_CHAR_LIMIT")
    user_char_limit: int = Field(1375, ge=100, alias="USER_CHAR_LIMIT")
    memory_write_approval: bool = Field(False, alias="MEMORY_WRITE_APPROVAL")
    memory_staged_ttl_seconds: int = Field(7 * 24 * 3600, gt=0, alias="MEMORY_STAGED_TTL_SECONDS")
    skill_write_approval: bool = Field(False, alias="SKILL_WRITE_APPROVAL")
    skill_staged_ttl_seconds: int = Field(7 * 24 * 3600, gt=0, alias="SKILL_STAGED_TTL_SECONDS")
    memory_scan_model: str | None = Field(None, alias="MEMORY_SCAN_MODEL")
    memory_scan_timeout_seconds: float = Field(20.0, gt=0, alias="MEMORY_SCAN_TIMEOUT_SECONDS")
    sse_keepalive_seconds: float = Field(15.0, gt=0, le=60, alias="SSE_KEEPALIVE_SECONDS")
    sse_redis_connections: int = Field(8, ge=2, le=256, alias="SSE_REDIS_CONNECTIONS")
    sse_max_streams_per_key: int = Field(24, ge=1, alias="SSE_MAX_STREAMS_PER_KEY")
    sse_subscriber_buffer: int = Field(1000, ge=200, alias="SSE_SUBSCRIBER_BUFFER")
    api_redis_connections: int = Field(32, ge=1, le=1024, alias="API_REDIS_CONNECTIONS")
    llm_provider: str = Field("auto", alias="LLM_PROVIDER")
    llm_max_tokens: int = Field(4096, alias="LLM_MAX_TOKENS")

    gateway_api_key: SecretStr | None = Field(None, alias="GATEWAY_API_KEY")
    gateway_host: str = Field("127.0.0.1", alias="GATEWAY_HOST")
    gateway_port: int = Field(8644, alias="GATEWAY_PORT")
    gateway_api_url: str | None = Field(None, alias="GATEWAY_API_URL")
    gateway_trusted_proxies: str = Field("", alias="GATEWAY_TRUSTED_PROXIES")
    webhook_unverified_per_minute: int = Field(60, ge=0, alias="WEBHOOK_UNVERIFIED_PER_MINUTE")
    webhook_callback_allow: str = Field("", alias="WEBHOOK_CALLBACK_ALLOW")
    telegram_bot_token: SecretStr | None = Field(None, alias="TELEGRAM_BOT_TOKEN")
    telegram_api_url: str = Field("https://api.telegram.org", alias="TELEGRAM_API_URL")
    telegram_allowed_users: str = Field("", alias="TELEGRAM_ALLOWED_USERS")
    outbox_backoff_base_seconds: float = Field(1.0, gt=0, alias="OUTBOX_BACKOFF_BASE_SECONDS")
    outbox_backoff_max_seconds: float = Field(60.0, gt=0, alias="OUTBOX_BACKOFF_MAX_SECONDS")

    searxng_url: str | None = Field(None, alias="SEARXNG_URL")
    brave_search_api_key: SecretStr | None = Field(None, alias="BRAVE_SEARCH_API_KEY")
    brave_search_url: str = Field("https://api.search.brave.com/res/v1/web/search", alias="BRAVE_SEARCH_URL")
    web_fetch_allow: str = Field("", alias="WEB_FETCH_ALLOW")
    web_fetch_max_bytes: int = Field(5_000_000, ge=1024, alias="WEB_FETCH_MAX_BYTES")
    web_fetch_timeout_seconds: float = Field(20.0, gt=0, alias="WEB_FETCH_TIMEOUT_SECONDS")
    web_extract_max_chars: int = Field(20_000, ge=500, alias="WEB_EXTRACT_MAX_CHARS")
    webhook_toolsets: str = Field("", alias="WEBHOOK_TOOLSETS")
    mcp_allow: str = Field("", alias="MCP_ALLOW")
    mcp_connect_timeout_seconds: float = Field(30.0, gt=0, alias="MCP_CONNECT_TIMEOUT_SECONDS")
    mcp_call_timeout_seconds: float = Field(60.0, gt=0, alias="MCP_CALL_TIMEOUT_SECONDS")
    mcp_max_tools: int = Field(30, ge=1, le=200, alias="MCP_MAX_TOOLS")
    mcp_result_max_chars: int = Field(20_000, ge=500, alias="MCP_RESULT_MAX_CHARS")
    mcp_schema_max_bytes: int = Field(4_000, ge=256, alias="MCP_SCHEMA_MAX_BYTES")
    mcp_max_servers: int = Field(20, ge=1, le=200, alias="MCP_MAX_SERVERS")
    mcp_reconnect_base_seconds: float = Field(1.0, ge=0, alias="MCP_RECONNECT_BASE_SECONDS")
    mcp_reconnect_max_seconds: float = Field(300.0, ge=0, alias="MCP_RECONNECT_MAX_SECONDS")
    mcp_idle_seconds: float = Field(900.0, gt=0, alias="MCP_IDLE_SECONDS")

    media_max_bytes: int = Field(20_000_000, ge=1024, alias="MEDIA_MAX_BYTES")
    llm_vision: bool | None = Field(None, alias="LLM_VISION")
    vision_model: str | None = Field(None, alias="VISION_MODEL")
    vision_base_url: str | None = Field(None, alias="VISION_BASE_URL")
    vision_api_key: SecretStr | None = Field(None, alias="VISION_API_KEY")
    stt_base_url: str | None = Field(None, alias="STT_BASE_URL")
    stt_model: str = Field("whisper-1", alias="STT_MODEL")
    stt_api_key: SecretStr | None = Field(None, alias="STT_API_KEY")
    stt_timeout_seconds: float = Field(120.0, gt=0, alias="STT_TIMEOUT_SECONDS")
    tts_base_url: str | None = Field(None, alias="TTS_BASE_URL")
    tts_model: str = Field("tts-1", alias="TTS_MODEL")
    tts_voice: str = Field("alloy", alias="TTS_VOICE")
    tts_api_key: SecretStr | None = Field(None, alias="TTS_API_KEY")

    console_secret: SecretStr | None = Field(None, alias="CONSOLE_SECRET")
    console_session_hours: float = Field(12.0, gt=0, le=24 * 90, alias="CONSOLE_SESSION_HOURS")

    @field_validator("approval_mode")
    @classmethod
    def _known_mode(cls, value: str) -> str:
        value = value.strip().lower()
        if value not in {"manual", "smart", "off"}:
            raise ValueError("APPROVAL_MODE must be manual, smart or off")
        return value

    @field_validator("webhook_callback_allow", "mcp_allow")
    @classmethod
    def _allow_list(cls, value: str) -> str:
        from shared.security.addresses import Allowlist

        Allowlist.parse(value)  # names the bad entry
        return value

    @field_validator("terminal_sandbox")
    @classmethod
    def _known_sandbox(cls, value: str) -> str:
        value = value.strip().lower()
        if value not in {"bwrap", "none"}:
            raise ValueError("TERMINAL_SANDBOX must be bwrap or none")
        return value

    @field_validator("terminal_network_allow")
    @classmethod
    def _known_hosts(cls, value: str) -> str:
        from shared.security.addresses import Allowlist

        Allowlist.parse(value)  # a bad entry refuses to start, naming it
        return value

    @field_validator("curator_archive_after_days")
    @classmethod
    def _archive_after_stale(cls, value: float, info) -> float:
        stale = info.data.get("curator_stale_after_days")
        if stale is not None and value < stale:
            raise ValueError("CURATOR_ARCHIVE_AFTER_DAYS must not be less than CURATOR_STALE_AFTER_DAYS")
        return value

    @property
    def is_development(self) -> bool:
        return self.env.lower() in {"development", "dev", "test"}

    @property
    def sqlalchemy_url(self) -> str:
        """The database URL; a SQLite file under DATA_DIR unless DATABASE_URL says otherwise."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'hstack.db').resolve()}"

    @property
    def api_url(self) -> str:
        """Where the gateway reaches the api: GATEWAY_API_URL, else the local api on API_HOST:API_PORT."""
        if self.gateway_api_url:
            return self.gateway_api_url.rstrip("/")
        host = self.api_host if self.api_host not in {"0.0.0.0", "::", ""} else "127.0.0.1"
        return f"http://{host}:{self.api_port}"

    def allowed_telegram_ids(self) -> set[str]:
        """TELEGRAM_ALLOWED_USERS as a set of platform user ids."""
        return {part.strip() for part in self.telegram_allowed_users.split(",") if part.strip()}

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url)

    def secret_values(self) -> list[str]:
        """Values the log redactor must never print."""
        out = []
        for value in (self.admin_api_key, self.llm_api_key, self.metrics_token, self.gateway_api_key,
                      self.telegram_bot_token, self.console_secret, self.redis_password, self.vision_api_key,
                      self.stt_api_key, self.tts_api_key, self.embeddings_api_key):
            if value is not None and len(value.get_secret_value()) >= 6:
                out.append(value.get_secret_value())
        return out

    def check_secrets(self) -> None:
        """Refuse to start outside development on a missing or placeholder secret."""
        if self.is_development:
            return
        key = self.admin_api_key.get_secret_value() if self.admin_api_key else ""
        if key.strip().lower() in PLACEHOLDER_SECRETS or len(key) < 16:
            raise RuntimeError("ADMIN_API_KEY is missing, a placeholder or shorter than 16 characters")
        token = self.metrics_token.get_secret_value() if self.metrics_token else ""
        if token and (token.strip().lower() in PLACEHOLDER_SECRETS or len(token) < 16):
            raise RuntimeError("METRICS_TOKEN is a placeholder or shorter than 16 characters (unset it to scrape "
                               "with the admin key)")


def dotenv_path() -> Path:
    """The `.env` the stack reads: HSTACK_DOTENV, else `./.env`."""
    return Path(os.environ.get("HSTACK_DOTENV", ".env"))


def load_settings(**overrides) -> Settings:
    """Build Settings: `.env` fills only what the environment does not set."""
    values = {k: v for k, v in dotenv_values(dotenv_path()).items() if v is not None}
    merged = {**values, **{k: v for k, v in os.environ.items()}}
    known = {f.alias or name for name, f in Settings.model_fields.items()}
    data = {k: v for k, v in merged.items() if k in known}
    data.update(overrides)
    return Settings(**data)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return load_settings()
