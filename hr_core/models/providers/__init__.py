"""The providers' HTTP clients (OpenAI, Azure OpenAI, Anthropic), their wire formats and
what they share.
"""
