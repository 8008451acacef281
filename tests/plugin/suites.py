"""Suite texts shared by the end-to-end tests."""

CAPITALS = """\
suite: capitals
models:
  atlas:
    provider: scripted
    script:
      - {task: "capital-*", reply: "The capital of {{ country }} is {{ capital }}."}
  parrot:
    provider: echo
judges:
  grader:
    provider: scripted
    script:
      - regex: "(?s)Reference: (.*?)\\nAnswer: (.*)"
        reply: "{% if groups[1]|lower in groups[2]|lower %}Rating: [[9]]{% else %}Rating: [[2]]{% endif %}"
matrix:
  country: [France, Japan]
derived:
  capital: "{{ {'France': 'Paris', 'Japan': 'Tokyo'}[country] }}"
tasks:
  - id: "capital-{{ country | lower }}"
    tags: [geography]
    prompt: "What is the capital of {{ country }}?"
scorers:
  - {name: C, type: contains, value: "{{ capital }}"}
  - name: J
    type: llm_judge
    judge: grader
    reference: "{{ capital }}"
    prompt: "Grade the answer.\\nReference: {{ reference }}\\nAnswer: {{ answer }}"
composite: "0.7*C + 0.3*J"
pass_threshold: 0.8
"""
