-- Schema version 1 as claim-monitor 0.1 created it on sqlite (create_all of the models at c77339f).
-- Frozen: every later step starts from exactly this; never edit it.
CREATE TABLE schema_version (
	id INTEGER NOT NULL, 
	version INTEGER NOT NULL, 
	migrated_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE seed_files (
	path VARCHAR(500) NOT NULL, 
	sha256 VARCHAR(64) NOT NULL, 
	kind VARCHAR(20) NOT NULL, 
	imported_at DATETIME NOT NULL, 
	PRIMARY KEY (path)
);
CREATE TABLE lines (
	id VARCHAR(32) NOT NULL, 
	question TEXT NOT NULL, 
	framing TEXT, 
	body TEXT, 
	topics JSON NOT NULL, 
	span_text VARCHAR(200), 
	span_start INTEGER, 
	span_end INTEGER, 
	has_next_marker BOOLEAN NOT NULL, 
	source_file VARCHAR(500), 
	source_kind VARCHAR(20) NOT NULL, 
	created_at DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	retired_at DATETIME, 
	PRIMARY KEY (id)
);
CREATE TABLE claims (
	id VARCHAR(32) NOT NULL, 
	text TEXT NOT NULL, 
	kind VARCHAR(20) NOT NULL, 
	title TEXT, 
	original_title TEXT, 
	date_text VARCHAR(100), 
	date_start DATE, 
	date_end DATE, 
	date_precision VARCHAR(10), 
	date_approximate BOOLEAN NOT NULL, 
	topics JSON NOT NULL, 
	created_at DATETIME NOT NULL, 
	retired_at DATETIME, 
	replaced_by VARCHAR(32), 
	PRIMARY KEY (id)
);
CREATE TABLE papers (
	arxiv_id VARCHAR(40) NOT NULL, 
	version INTEGER NOT NULL, 
	title TEXT NOT NULL, 
	abstract TEXT NOT NULL, 
	authors JSON NOT NULL, 
	categories JSON NOT NULL, 
	primary_category VARCHAR(40), 
	published DATE, 
	updated DATETIME, 
	comment TEXT, 
	journal_ref TEXT, 
	doi VARCHAR(200), 
	source VARCHAR(40) NOT NULL, 
	first_seen DATETIME NOT NULL, 
	needs_rejudge BOOLEAN NOT NULL, 
	PRIMARY KEY (arxiv_id)
);
CREATE INDEX ix_papers_published ON papers (published);
CREATE TABLE fetch_marks (
	source VARCHAR(40) NOT NULL, 
	query_key VARCHAR(500) NOT NULL, 
	high_water DATETIME NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (source, query_key)
);
CREATE TABLE relevance_marks (
	claim_id VARCHAR(32) NOT NULL, 
	claim_text_hash VARCHAR(64) NOT NULL, 
	last_version_row INTEGER NOT NULL, 
	updated_at DATETIME NOT NULL, 
	PRIMARY KEY (claim_id, claim_text_hash)
);
CREATE TABLE embeddings (
	id INTEGER NOT NULL, 
	"key" VARCHAR(200) NOT NULL, 
	model VARCHAR(100) NOT NULL, 
	dim INTEGER NOT NULL, 
	vector BLOB NOT NULL, 
	PRIMARY KEY (id), 
	UNIQUE ("key", model)
);
CREATE TABLE llm_exchanges (
	id INTEGER NOT NULL, 
	run_id INTEGER, 
	provider VARCHAR(40) NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	prompt_version VARCHAR(40) NOT NULL, 
	request JSON NOT NULL, 
	response TEXT, 
	response_format VARCHAR(20), 
	prompt_tokens INTEGER NOT NULL, 
	completion_tokens INTEGER NOT NULL, 
	latency_ms INTEGER NOT NULL, 
	error TEXT, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id)
);
CREATE INDEX ix_llm_exchanges_run_id ON llm_exchanges (run_id);
CREATE TABLE judge_batches (
	id INTEGER NOT NULL, 
	batch_id VARCHAR(200) NOT NULL, 
	input_file_id VARCHAR(200) NOT NULL, 
	output_file_id VARCHAR(200), 
	status VARCHAR(20) NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	prompt_version VARCHAR(40) NOT NULL, 
	requests JSON NOT NULL, 
	pairs INTEGER NOT NULL, 
	run_id INTEGER, 
	submitted_at DATETIME NOT NULL, 
	collected_at DATETIME, 
	PRIMARY KEY (id), 
	UNIQUE (batch_id)
);
CREATE TABLE digests (
	id INTEGER NOT NULL, 
	period_key VARCHAR(40) NOT NULL, 
	period_start DATE NOT NULL, 
	period_end DATE NOT NULL, 
	markdown_path VARCHAR(500), 
	html_path VARCHAR(500), 
	content_sha256 VARCHAR(64) NOT NULL, 
	stats JSON NOT NULL, 
	created_at DATETIME NOT NULL, 
	sent_at DATETIME, 
	recipients JSON NOT NULL, 
	run_id INTEGER, 
	PRIMARY KEY (id), 
	UNIQUE (period_key)
);
CREATE TABLE runs (
	id INTEGER NOT NULL, 
	command VARCHAR(40) NOT NULL, 
	status VARCHAR(20) NOT NULL, 
	started_at DATETIME NOT NULL, 
	finished_at DATETIME, 
	host VARCHAR(200), 
	pid INTEGER, 
	counts JSON NOT NULL, 
	tokens INTEGER NOT NULL, 
	errors JSON NOT NULL, 
	warnings JSON NOT NULL, 
	PRIMARY KEY (id)
);
CREATE TABLE locks (
	name VARCHAR(100) NOT NULL, 
	holder VARCHAR(300) NOT NULL, 
	acquired_at DATETIME NOT NULL, 
	heartbeat_at DATETIME NOT NULL, 
	PRIMARY KEY (name)
);
CREATE TABLE line_claims (
	line_id VARCHAR(32) NOT NULL, 
	claim_id VARCHAR(32) NOT NULL, 
	role VARCHAR(20) NOT NULL, 
	position INTEGER NOT NULL, 
	retired_at DATETIME, 
	PRIMARY KEY (line_id, claim_id), 
	FOREIGN KEY(line_id) REFERENCES lines (id), 
	FOREIGN KEY(claim_id) REFERENCES claims (id)
);
CREATE TABLE anchors (
	id INTEGER NOT NULL, 
	line_id VARCHAR(32) NOT NULL, 
	arxiv_id VARCHAR(40) NOT NULL, 
	cited_date_text VARCHAR(40), 
	cited_title TEXT, 
	position INTEGER NOT NULL, 
	retired_at DATETIME, 
	status VARCHAR(20) NOT NULL, 
	found_title TEXT, 
	found_published DATE, 
	checked_at DATETIME, 
	PRIMARY KEY (id), 
	UNIQUE (line_id, arxiv_id), 
	FOREIGN KEY(line_id) REFERENCES lines (id)
);
CREATE INDEX ix_anchors_arxiv_id ON anchors (arxiv_id);
CREATE TABLE paper_versions (
	id INTEGER NOT NULL, 
	arxiv_id VARCHAR(40) NOT NULL, 
	version INTEGER NOT NULL, 
	title TEXT NOT NULL, 
	abstract TEXT NOT NULL, 
	updated DATETIME, 
	source VARCHAR(40) NOT NULL, 
	seen_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	UNIQUE (arxiv_id, version), 
	FOREIGN KEY(arxiv_id) REFERENCES papers (arxiv_id)
);
CREATE INDEX ix_paper_versions_arxiv_id ON paper_versions (arxiv_id);
CREATE TABLE candidates (
	id INTEGER NOT NULL, 
	arxiv_id VARCHAR(40) NOT NULL, 
	version INTEGER NOT NULL, 
	claim_id VARCHAR(32) NOT NULL, 
	score FLOAT NOT NULL, 
	method VARCHAR(40) NOT NULL, 
	run_id INTEGER, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	UNIQUE (arxiv_id, version, claim_id), 
	FOREIGN KEY(arxiv_id) REFERENCES papers (arxiv_id), 
	FOREIGN KEY(claim_id) REFERENCES claims (id)
);
CREATE INDEX ix_candidates_claim_id ON candidates (claim_id);
CREATE INDEX ix_candidates_arxiv_id ON candidates (arxiv_id);
CREATE TABLE assessments (
	id INTEGER NOT NULL, 
	cache_key VARCHAR(64) NOT NULL, 
	generation INTEGER NOT NULL, 
	arxiv_id VARCHAR(40) NOT NULL, 
	version INTEGER NOT NULL, 
	claim_id VARCHAR(32) NOT NULL, 
	claim_text_hash VARCHAR(64) NOT NULL, 
	judge VARCHAR(40) NOT NULL, 
	model VARCHAR(200) NOT NULL, 
	prompt_version VARCHAR(40) NOT NULL, 
	label VARCHAR(12) NOT NULL, 
	confidence FLOAT NOT NULL, 
	rationale TEXT NOT NULL, 
	evidence TEXT NOT NULL, 
	grounded BOOLEAN NOT NULL, 
	is_current BOOLEAN NOT NULL, 
	exchange_id INTEGER, 
	run_id INTEGER, 
	created_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	UNIQUE (cache_key, generation), 
	FOREIGN KEY(arxiv_id) REFERENCES papers (arxiv_id), 
	FOREIGN KEY(claim_id) REFERENCES claims (id), 
	FOREIGN KEY(exchange_id) REFERENCES llm_exchanges (id)
);
CREATE INDEX ix_assessments_arxiv_id ON assessments (arxiv_id);
CREATE INDEX ix_assessments_claim ON assessments (claim_id, is_current);
CREATE TABLE verdicts (
	id INTEGER NOT NULL, 
	claim_id VARCHAR(32) NOT NULL, 
	status VARCHAR(12) NOT NULL, 
	previous_status VARCHAR(12), 
	changed BOOLEAN NOT NULL, 
	as_of DATE NOT NULL, 
	evidence JSON NOT NULL, 
	summary TEXT NOT NULL, 
	run_id INTEGER, 
	computed_at DATETIME NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(claim_id) REFERENCES claims (id)
);
CREATE INDEX ix_verdicts_claim_id ON verdicts (claim_id);
