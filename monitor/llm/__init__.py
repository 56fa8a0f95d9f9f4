"""The LLM layer every stage that asks a model uses: the judge, the relevance screen, the research
questions and the claim rewording.

texts: what a model reads (papers, claims) and what a request leaves behind (Exchange, Recorder);
transport: one OpenAI-compatible chat call with format fallback, retries and a circuit breaker;
prompts: template loading and the one prompt-version formula; answers: parsing helpers;
recorder: exchanges into `llm_exchanges`; cost: token estimates and prices; workers: the bounded
worker loop with budget reservation; batch: the OpenAI Batch API. Nothing here imports a stage.
"""
