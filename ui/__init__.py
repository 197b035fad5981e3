"""Streamlit views over agentcore: session state, the shared sidebar, and the playground's parts."""
