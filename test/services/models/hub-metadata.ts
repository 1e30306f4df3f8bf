/**
 * Facts of the built-in catalog's repositories as the model hub publishes them (huggingface.co
 * `api/models/<repo>` pipeline_tag and file list, the repo's config.json and chat template), transcribed
 * here because the hub cannot be reached from the tests. Only what the catalog's claims depend on: the
 * ONNX graph names, the architecture and model type, and the template features (tool calls, thinking).
 */
const ALL_DTYPES = ['', '_fp16', '_quantized', '_int8', '_uint8', '_q4', '_q4f16', '_bnb4'];
const graphs = (base: string, suffixes = ALL_DTYPES) => suffixes.map((s) => `onnx/${base}${s}.onnx`);
const TOKENIZER = ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json'];

export interface HubRepoFacts {
  pipeline_tag: string;
  files: string[];
  config: { architectures: string[]; model_type: string; vision_config?: Record<string, unknown> };
  /** A part of the chat template that decides show's capabilities ('' when the model has none). */
  template: string;
}

export const HUB_FACTS: Record<string, HubRepoFacts> = {
  'onnx-community/Qwen2.5-0.5B-Instruct': {
    pipeline_tag: 'text-generation',
    files: [...TOKENIZER, 'generation_config.json', 'merges.txt', 'vocab.json', ...graphs('model')],
    config: { architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2' },
    template:
      "{%- if tools %}{{- '<|im_start|>system\\n' }}# Tools\\n\\n<tools>{%- for tool in tools %}{{ tool | tojson }}{%- endfor %}</tools>{%- endif %}",
  },
  'onnx-community/Qwen3-0.6B-ONNX': {
    pipeline_tag: 'text-generation',
    files: [
      ...TOKENIZER,
      'generation_config.json',
      'merges.txt',
      'vocab.json',
      ...graphs('model', ['', '_fp16', '_q4', '_q4f16', '_quantized', '_int8', '_uint8', '_bnb4']),
    ],
    config: { architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3' },
    template:
      "{%- if tools %}<tools>{%- endif %}{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}",
  },
  'HuggingFaceTB/SmolLM2-360M-Instruct': {
    pipeline_tag: 'text-generation',
    files: [...TOKENIZER, 'generation_config.json', 'merges.txt', 'vocab.json', ...graphs('model')],
    config: { architectures: ['LlamaForCausalLM'], model_type: 'llama' },
    template:
      "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}",
  },
  'HuggingFaceTB/SmolVLM-256M-Instruct': {
    pipeline_tag: 'image-text-to-text',
    files: [
      ...TOKENIZER,
      'added_tokens.json',
      'chat_template.json',
      'generation_config.json',
      'merges.txt',
      'model.safetensors',
      'preprocessor_config.json',
      'processor_config.json',
      'vocab.json',
      ...graphs('vision_encoder'),
      ...graphs('embed_tokens'),
      ...graphs('decoder_model_merged'),
    ],
    config: {
      architectures: ['Idefics3ForConditionalGeneration'],
      model_type: 'idefics3',
      vision_config: { model_type: 'idefics3_vision', patch_size: 16 },
    },
    template:
      "<|im_start|>{% for message in messages %}{{message['role'] | capitalize}}{% if message['content'][0]['type'] == 'image' %}{{':'}}{% else %}{{': '}}{% endif %}{% for line in message['content'] %}{% if line['type'] == 'text' %}{{line['text']}}{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}",
  },
  'Xenova/all-MiniLM-L6-v2': {
    pipeline_tag: 'feature-extraction',
    files: [...TOKENIZER, 'vocab.txt', ...graphs('model')],
    config: { architectures: ['BertModel'], model_type: 'bert' },
    template: '',
  },
  'Xenova/nomic-embed-text-v1': {
    pipeline_tag: 'feature-extraction',
    files: [...TOKENIZER, 'vocab.txt', ...graphs('model', ['', '_fp16', '_quantized'])],
    config: { architectures: ['NomicBertModel'], model_type: 'nomic_bert' },
    template: '',
  },
  'Xenova/ms-marco-MiniLM-L-6-v2': {
    pipeline_tag: 'text-classification',
    files: [...TOKENIZER, 'vocab.txt', ...graphs('model')],
    config: { architectures: ['BertForSequenceClassification'], model_type: 'bert' },
    template: '',
  },
  // onnx-community's *_timestamped Whisper exports: the decoders also output the cross-attention weights
  // (`cross_attentions.*`) and generation_config.json names the alignment heads, which word timestamps need.
  // The five share one layout (the same conversion script made them all).
  ...Object.fromEntries(
    ['whisper-tiny', 'whisper-tiny.en', 'whisper-base', 'whisper-base.en', 'whisper-small'].map((m) => [`onnx-community/${m}_timestamped`, {
      pipeline_tag: 'automatic-speech-recognition',
      files: [
        ...TOKENIZER,
        'added_tokens.json',
        'generation_config.json',
        'preprocessor_config.json',
        'quantize_config.json',
        'merges.txt',
        'vocab.json',
        'normalizer.json',
        ...graphs('encoder_model'),
        ...graphs('decoder_model'),
        ...graphs('decoder_model_merged'),
        ...graphs('decoder_with_past_model'),
      ],
      config: { architectures: ['WhisperForConditionalGeneration'], model_type: 'whisper' },
      template: '',
    }]),
  ),
};
