"""Adaptive rate limiting per endpoint: the limiter, the rate headers, the endpoint registry
and the halt of an unreachable endpoint.
"""
