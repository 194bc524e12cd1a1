# The vLLM image the pools run (components/pins.py VLLM_IMAGE; tests/serving/test_images.py keeps them equal).
# The capacity model is calibrated against this version's startup logs. Mirror it into your registry with:
#   docker build -f serving/images/vllm.Dockerfile -t <registry>/vllm-openai:v0.32.0 serving/images
FROM vllm/vllm-openai:v0.32.0
